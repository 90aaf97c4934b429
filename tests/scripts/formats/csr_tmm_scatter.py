# C = A^T B computed from A's CSR arrays (the CSC arrays of A^T): the first
# iteration zero-fills C, the second scatters every stored A[i, j] into row j
# of C (all roles spatial: a reduction role would need a T.init, which has
# no place to run because the spatial J lies under I).
@T.prim_func
def csr_tmm_scatter(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    K = T.sp.dense_fixed(feat_size)
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (I, K), "float32")
    C = T.sp.match_buffer(c, (J_detach, K), "float32")
    with T.sp.iteration([J_detach, K], "SS", "zero") as [jd, k]:
        C[jd, k] = 0.0
    with T.sp.iteration([I, J, K], "SSS", "scatter") as [i, j, k]:
        C[j, k] = C[j, k] + A[i, j] * B[i, k]
