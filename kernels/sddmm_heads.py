@T.prim_func
def sddmm_heads(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    heads: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    # Multi-head SDDMM: out[i, j, h] = sum_k X[i, h, k] * Y[j, h, k] over the
    # non-zeros (i, j), every head in one pass over the structure (the
    # gradient of a multi-head SpMM's edge values, or per-head attention
    # scores).
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    H = T.sp.dense_fixed(heads)
    K = T.sp.dense_fixed(feat_size)
    X = T.sp.match_buffer(x, (I, H, K), "float32")
    Y = T.sp.match_buffer(y, (J_detach, H, K), "float32")
    O = T.sp.match_buffer(out, (I, J, H), "float32")
    with T.sp.iteration([I, J, H, K], "SSSR", "sddmm_heads") as [i, j, h, k]:
        with T.init():
            O[i, j, h] = 0.0
        O[i, j, h] = O[i, j, h] + X[i, h, k] * Y[j, h, k]
