# Multi-head SDDMM over the row segments of a CSR pattern (sddmm_segments'
# rows with sddmm_heads' heads): out[e, h] = X[i, h] . Y[j, h] for each
# non-zero e = (i, j), a thread group walking a run of at most a fixed
# number of a row's non-zeros instead of finding each one's row by binary
# search. Segment s covers the CSR positions seg_ptr[s] .. seg_ptr[s + 1]
# of row seg_row[s]; each (non-zero, head) is written once.
@T.prim_func
def sddmm_heads_segments(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    seg_row: T.handle,
    seg_ptr: T.handle,
    indices: T.handle,
    segs: T.int32,
    m: T.int32,
    n: T.int32,
    heads: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J_detach = T.sp.dense_fixed(n)
    H = T.sp.dense_fixed(heads)
    K = T.sp.dense_fixed(feat_size)
    S = T.sp.dense_fixed(segs)
    I_seg = T.sp.compressed_fixed(S, (m, 1), seg_row, "int32")
    J_seg = T.sp.compressed_varied(I_seg, (n, nnz), (seg_ptr, indices), "int32")
    X = T.sp.match_buffer(x, (I, H, K), "float32")
    Y = T.sp.match_buffer(y, (J_detach, H, K), "float32")
    O = T.sp.match_buffer(out, (S, I_seg, J_seg, H), "float32")
    with T.sp.iteration([S, I_seg, J_seg, H, K], "SSSSR", "sddmm_heads_segments") as [s, i, j, h, k]:
        with T.init():
            O[s, i, j, h] = 0.0
        O[s, i, j, h] = O[s, i, j, h] + X[i, h, k] * Y[j, h, k]
