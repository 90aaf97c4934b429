# SDDMM (dot) over the row segments of a CSR pattern: each row's non-zeros cut
# into runs of at most a fixed length (as csrmm_segments'), so that a thread
# group walks one run instead of finding each non-zero's row by binary search
# in indptr, and a long row is many units of parallel work. Segment s covers
# the CSR positions seg_ptr[s] .. seg_ptr[s + 1] of row seg_row[s]: the
# output is the CSR pattern's own (nnz,) array, each position written once.
@T.prim_func
def sddmm_segments(
    x: T.handle,
    y: T.handle,
    out: T.handle,
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
    X = T.sp.match_buffer(x, (I, K), "float32")
    Y = T.sp.match_buffer(y, (J_detach, K), "float32")
    O = T.sp.match_buffer(out, (S, I_seg, J_seg), "float32")
    with T.sp.iteration([S, I_seg, J_seg, K], "SSSR", "sddmm_segments") as [s, i, j, k]:
        with T.init():
            O[s, i, j] = 0.0
        O[s, i, j] = O[s, i, j] + X[i, k] * Y[j, k]
