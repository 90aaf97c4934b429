@T.prim_func
def sddmm_add(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    # out[i, j, f] = X[i, f] + Y[j, f] over the non-zeros (i, j): the
    # element-wise sum of a row's and a column's features on every edge
    # (sddmm with op="add"; GAT's a_dst[i] + a_src[j] per head).
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    F = T.sp.dense_fixed(feat_size)
    X = T.sp.match_buffer(x, (I, F), "float32")
    Y = T.sp.match_buffer(y, (J_detach, F), "float32")
    O = T.sp.match_buffer(out, (I, J, F), "float32")
    with T.sp.iteration([I, J, F], "SSS", "sddmm_add") as [i, j, f]:
        O[i, j, f] = X[i, f] + Y[j, f]
