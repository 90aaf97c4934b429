@T.prim_func
def csrmm_min(
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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float64")
    B = T.match_buffer(b, (n, 64), "float64")
    C = T.match_buffer(c, (m, 64), "float64")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(4, thread="threadIdx.y"):
            if i_0 * 4 + i_1 < m:
                v3: T.int32 = i_0 * 4 + i_1
                for k_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                    for k_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                        v1: T.int32 = (k_init_0 * 32 + k_init_1) * 2
                        for k_init_2 in T.vectorized(2):
                            with T.block("csrmm_init"):
                                C[v3, v1 + k_init_2] = T.float64(T.inf)
                v17: T.int32 = i_0 * 4 + i_1
                v18: T.int64 = (J_indptr[v17 + 1] - J_indptr[v17] + T.int64(3)) // T.int64(4)
                for k_0 in T.thread_binding(1, thread="blockIdx.y"):
                    for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                        C_local = T.alloc_buffer((2,), "float64", scope="local")
                        v7: T.int32 = k_0 * 64 + k_1 * 2
                        for ax0_o in T.unroll(1):
                            for ax0_i in T.vectorized(2):
                                C_local[ax0_o * 2 + ax0_i] = C[v17, v7 + (ax0_o * 2 + ax0_i)]
                        for j_0 in T.serial(v18):
                            for j_1 in T.unroll(T.int64(4)):
                                if j_0 * T.int64(4) + j_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                    v8: T.int64 = J_indptr[i_0 * 4 + i_1] + (j_0 * T.int64(4) + j_1)
                                    v9: T.int64 = J_indices[v8]
                                    v10: T.int32 = (k_0 * 32 + k_1) * 2
                                    for k_2 in T.vectorized(2):
                                        with T.block("csrmm"):
                                            C_local[k_2] = T.min(C_local[k_2], A[v8] * B[v9, v10 + k_2])
                        v14: T.int32 = k_0 * 64 + k_1 * 2
                        for ax0_o in T.unroll(1):
                            for ax0_i in T.vectorized(2):
                                C[v17, v14 + (ax0_o * 2 + ax0_i)] = C_local[ax0_o * 2 + ax0_i]
