@T.prim_func
def csrmm_mean(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    lengths: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 10000}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, 10000), "float32")
    C = T.match_buffer(c, (m, 10000), "float32")
    L = T.match_buffer(lengths, (m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for k_init in T.serial(10000):
            with T.block("csrmm_init"):
                C[i, k_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + 32) < nnz:
                T.prefetch(B[J_indices[J_indptr[i] + (j + 32)], 0], 10000)
            v2: T.int32 = J_indptr[i] + j
            v3: T.int32 = J_indices[v2]
            for k_0 in T.serial(1250):
                for k_1 in T.vectorized(8):
                    with T.block("csrmm"):
                        C[i, k_0 * 8 + k_1] = C[i, k_0 * 8 + k_1] + A[v2] * B[v3, k_0 * 8 + k_1]
        for k_1_0 in T.serial(1250):
            for k_1_1 in T.vectorized(8):
                with T.block("row_div"):
                    C[i, k_1_0 * 8 + k_1_1] = C[i, k_1_0 * 8 + k_1_1] / L[i]
