@T.prim_func
def sddmm_dot(
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
    # out[i, j] = sum_k X[i, k] * Y[j, k] over the non-zeros (i, j) of a CSR
    # pattern: the sampled product of torch.ops.sparsetir.sddmm (the operator
    # scales by the non-zeros' values afterwards when they are given).
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    K = T.sp.dense_fixed(feat_size)
    X = T.sp.match_buffer(x, (I, K), "float32")
    Y = T.sp.match_buffer(y, (J_detach, K), "float32")
    O = T.sp.match_buffer(out, (I, J), "float32")
    with T.sp.iteration([I, J, K], "SSR", "sddmm") as [i, j, k]:
        with T.init():
            O[i, j] = 0.0
        O[i, j] = O[i, j] + X[i, k] * Y[j, k]
