@T.prim_func
def csrmm(
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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 3}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, 3), "float32")
    C = T.match_buffer(c, (m, 3), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        C_local = T.alloc_buffer((3,), "float32", scope="local")
        for k_init in T.serial(3):
            with T.block("csrmm_init"):
                C_local[k_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + 32) < nnz:
                T.prefetch(B[J_indices[J_indptr[i] + (j + 32)], 0], 3)
            v0: T.int32 = J_indptr[i] + j
            v1: T.int32 = J_indices[v0]
            for k in T.serial(3):
                with T.block("csrmm"):
                    C_local[k] = C_local[k] + A[v0] * B[v1, k]
        for ax0 in T.unroll(3):
            C[i, ax0] = C_local[ax0]
