@T.prim_func
def csrmm_fixed_width(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, 16), "float32")
    C = T.match_buffer(c, (m, 16), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.serial(m):
        for k_init in T.serial(16):
            with T.block("csrmm_init"):
                C[i, k_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            for k in T.serial(16):
                with T.block("csrmm"):
                    C[i, k] = C[i, k] + A[J_indptr[i] + j] * B[J_indices[J_indptr[i] + j], k]
