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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    O = T.match_buffer(out, (nnz,), "float32")
    S = T.alloc_buffer((m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.serial(m):
        with T.block("row_sum_init"):
            S[i] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            with T.block("row_sum"):
                S[i] = S[i] + A[J_indptr[i] + j]
    for i_1 in T.serial(m):
        for j_1 in T.serial(J_indptr[i_1 + 1] - J_indptr[i_1]):
            with T.block("row_div"):
                O[J_indptr[i_1] + j_1] = A[J_indptr[i_1] + j_1] / S[i_1]
