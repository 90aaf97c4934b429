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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 1})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n, "int32")
    K = T.sp.dense_fixed(16, "int32")
    J_dense = T.sp.dense_varied(I, (n, nnz), indptr, "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    C = T.sp.match_buffer(c, (I, K), "float32")
    J_indptr = T.sp.match_buffer(indptr, (I,), "int32", extra_storage=1)
    J_indices = T.sp.match_buffer(indices, (I, J_dense), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.serial(m):
        for k_init in T.serial(16):
            with T.block("csrmm_init"):
                C[i, k_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            for k in T.serial(16):
                with T.block("csrmm"):
                    C[i, k] = C[i, k] + A[i, j] * B[J_indices[i, j], k * 1 + 0]
