@T.prim_func
def row_normalize(
    a: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 1})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_dense = T.sp.dense_varied(I, (n, nnz), indptr, "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    O = T.sp.match_buffer(out, (I, J), "float32")
    S = T.sp.alloc_buffer((I,), "float32")
    J_indptr = T.sp.match_buffer(indptr, (I,), "int32", extra_storage=1)
    J_indices = T.sp.match_buffer(indices, (I, J_dense), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.serial(m):
        with T.block("row_sum_init"):
            S[i] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            with T.block("row_sum"):
                S[i] = S[i] + A[i, j]
    for i_1 in T.serial(m):
        for j_1 in T.serial(J_indptr[i_1 + 1] - J_indptr[i_1]):
            with T.block("row_div"):
                O[i_1, j_1] = A[i_1, j_1] / S[i_1]
