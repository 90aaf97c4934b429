# DCSR SpMM with the output kept compact: one output row per stored row of A
# (C over (O, I, K) shares the O and I levels of A).
@T.prim_func
def dcsr_spmm_compact(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr_i: T.handle,
    indices_i: T.handle,
    indptr_j: T.handle,
    indices_j: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz_i: T.int32,
    nnz_j: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    O = T.sp.dense_fixed(1)
    I = T.sp.compressed_varied(O, (m, nnz_i), (indptr_i, indices_i), "int32")
    J = T.sp.compressed_varied(I, (n, nnz_j), (indptr_j, indices_j), "int32")
    J_detach = T.sp.dense_fixed(n)
    K = T.sp.dense_fixed(feat_size)
    A = T.sp.match_buffer(a, (O, I, J), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    C = T.sp.match_buffer(c, (O, I, K), "float32")
    with T.sp.iteration([O, I, J, K], "SSRS", "dcsrmm") as [o, i, j, k]:
        with T.init():
            C[o, i, k] = 0.0
        C[o, i, k] = C[o, i, k] + A[o, i, j] * B[j, k]
