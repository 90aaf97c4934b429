# 3-D CSF MTTKRP: out[i, r] = sum_{j, k} T[i, j, k] * B[j, r] * C[k, r].
@T.prim_func
def csf_mttkrp(
    t: T.handle,
    b: T.handle,
    c: T.handle,
    out: T.handle,
    indptr_j: T.handle,
    indices_j: T.handle,
    indptr_k: T.handle,
    indices_k: T.handle,
    d0: T.int32,
    d1: T.int32,
    d2: T.int32,
    rank: T.int32,
    nnz_j: T.int32,
    nnz_k: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(d0)
    J = T.sp.compressed_varied(I, (d1, nnz_j), (indptr_j, indices_j), "int32")
    K = T.sp.compressed_varied(J, (d2, nnz_k), (indptr_k, indices_k), "int32")
    J_detach = T.sp.dense_fixed(d1)
    K_detach = T.sp.dense_fixed(d2)
    R = T.sp.dense_fixed(rank)
    X = T.sp.match_buffer(t, (I, J, K), "float32")
    B = T.sp.match_buffer(b, (J_detach, R), "float32")
    C = T.sp.match_buffer(c, (K_detach, R), "float32")
    Y = T.sp.match_buffer(out, (I, R), "float32")
    with T.sp.iteration([I, J, K, R], "SRRS", "mttkrp") as [i, j, k, r]:
        with T.init():
            Y[i, r] = 0.0
        Y[i, r] = Y[i, r] + X[i, j, k] * B[j, r] * C[k, r]
