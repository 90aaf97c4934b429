@T.prim_func
def csrmm_heads(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    heads: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64, "heads": 2}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz, 2), "float32")
    B = T.match_buffer(b, (n, 2, 64), "float32")
    C = T.match_buffer(c, (m, 2, 64), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(4, thread="threadIdx.y"):
            if i_0 * 4 + i_1 < m:
                v4: T.int32 = i_0 * 4 + i_1
                for h_init in T.thread_binding(2, thread="blockIdx.z"):
                    for k_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                        for k_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                            v1: T.int32 = (k_init_0 * 32 + k_init_1) * 2
                            for k_init_2 in T.vectorized(2):
                                with T.block("csrmm_heads_init"):
                                    C[v4, h_init, v1 + k_init_2] = T.float32(0.0)
                v20: T.int32 = i_0 * 4 + i_1
                v21: T.int32 = (J_indptr[v20 + 1] - J_indptr[v20] + 3) // 4
                for h in T.thread_binding(2, thread="blockIdx.z"):
                    for k_0 in T.thread_binding(1, thread="blockIdx.y"):
                        for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                            C_local = T.alloc_buffer((2,), "float32", scope="local")
                            v8: T.int32 = k_0 * 64 + k_1 * 2
                            for ax0_o in T.unroll(1):
                                for ax0_i in T.vectorized(2):
                                    C_local[ax0_o * 2 + ax0_i] = C[v20, h, v8 + (ax0_o * 2 + ax0_i)]
                            for j_0 in T.serial(v21):
                                for j_1 in T.unroll(4):
                                    if j_0 * 4 + j_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                        v9: T.int32 = J_indptr[i_0 * 4 + i_1] + (j_0 * 4 + j_1)
                                        v10: T.int32 = J_indices[v9]
                                        v11: T.int32 = (k_0 * 32 + k_1) * 2
                                        for k_2 in T.vectorized(2):
                                            with T.block("csrmm_heads"):
                                                C_local[k_2] = C_local[k_2] + A[v9, h] * B[v10, h, v11 + k_2]
                            v15: T.int32 = k_0 * 64 + k_1 * 2
                            for ax0_o in T.unroll(1):
                                for ax0_i in T.vectorized(2):
                                    C[v20, h, v15 + (ax0_o * 2 + ax0_i)] = C_local[ax0_o * 2 + ax0_i]
