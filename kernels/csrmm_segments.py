# SpMM (sum) over the row segments of a CSR matrix: each row's non-zeros cut
# into runs of at most a fixed length, so that a long row is many units of
# parallel work instead of one. Segment s covers the CSR positions
# seg_ptr[s] .. seg_ptr[s + 1] of row seg_row[s]; the values and column
# indices are the CSR matrix's own arrays, only the row pointers are finer.
# Segments of one row add into the same output row: the iteration is atomic
# and the output starts zeroed. The output is in the accumulator's type
# (T.float32, a name: float32 for float32 and 16-bit values, float64 for
# float64): a 16-bit row's partial sums meet in float32 and the caller
# rounds the row once, where an atomic add into 16 bits would round at every
# segment. The products are formed in that type too.
@T.prim_func
def csrmm_segments(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    seg_row: T.handle,
    seg_ptr: T.handle,
    indices: T.handle,
    segs: T.int32,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J_detach = T.sp.dense_fixed(n)
    K = T.sp.dense_fixed(feat_size)
    S = T.sp.dense_fixed(segs)
    I_seg = T.sp.compressed_fixed(S, (m, 1), seg_row, "int32")
    J_seg = T.sp.compressed_varied(I_seg, (n, nnz), (seg_ptr, indices), "int32")
    A = T.sp.match_buffer(a, (S, I_seg, J_seg), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    C = T.sp.match_buffer(c, (I, K), T.float32)
    with T.sp.iteration([S, I_seg, J_seg, K], "SSRS", "csrmm_segments") as [s, i, j, k]:
        T.sp.iteration_attr({"accumulate": True, "atomic": True})
        C[i, k] = C[i, k] + T.float32(A[s, i, j]) * T.float32(B[j, k])
