@T.prim_func
def edge_softmax(
    scores: T.handle,
    probs: T.handle,
    row_max: T.handle,
    row_sum: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    heads: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"heads": 1}, "sparse_tir_level": 0})
    S = T.match_buffer(scores, (nnz, 1), "float32")
    P = T.match_buffer(probs, (nnz, 1), "float32")
    MX = T.match_buffer(row_max, (m, 1), "float32")
    SM = T.match_buffer(row_sum, (m, 1), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(4, thread="threadIdx.y"):
            if i_0 * 4 + i_1 < m:
                SM_local = T.alloc_buffer((1,), "float32", scope="local")
                v0: T.int32 = i_0 * 4 + i_1
                for ax0_1 in T.unroll(1):
                    SM_local[ax0_1] = SM[v0, ax0_1]
                MX_local = T.alloc_buffer((1,), "float32", scope="local")
                for h_init in T.serial(1):
                    with T.block("row_max_init"):
                        MX_local[h_init] = T.float32(-T.inf)
                v1: T.int32 = (J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1] + 31) // 32
                for h in T.serial(1):
                    for j_0 in T.serial(v1):
                        for j_1_1 in T.thread_binding(32, thread="threadIdx.x"):
                            if j_0 * 32 + j_1_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                with T.block("row_max"):
                                    MX_local[h] = T.max(MX_local[h], S[J_indptr[i_0 * 4 + i_1] + (j_0 * 32 + j_1_1), h])
                v2: T.int32 = (J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1] + 31) // 32
                for h_1 in T.serial(1):
                    for j_1_0 in T.serial(v2):
                        for j_1_1_1 in T.thread_binding(32, thread="threadIdx.x"):
                            if j_1_0 * 32 + j_1_1_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                with T.block("row_exp"):
                                    P[J_indptr[i_0 * 4 + i_1] + (j_1_0 * 32 + j_1_1_1), h_1] = T.exp(S[J_indptr[i_0 * 4 + i_1] + (j_1_0 * 32 + j_1_1_1), h_1] - MX_local[h_1])
                for h_2_init in T.serial(1):
                    with T.block("row_sum_init"):
                        SM_local[h_2_init] = T.float32(0.0)
                v3: T.int32 = (J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1] + 31) // 32
                for h_2 in T.serial(1):
                    for j_2_0 in T.serial(v3):
                        for j_2_1 in T.thread_binding(32, thread="threadIdx.x"):
                            if j_2_0 * 32 + j_2_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                with T.block("row_sum"):
                                    SM_local[h_2] = SM_local[h_2] + P[J_indptr[i_0 * 4 + i_1] + (j_2_0 * 32 + j_2_1), h_2]
                v4: T.int32 = (J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1] + 31) // 32
                for h_3 in T.serial(1):
                    for j_3_0 in T.serial(v4):
                        for j_3_1 in T.thread_binding(32, thread="threadIdx.x"):
                            if j_3_0 * 32 + j_3_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                with T.block("row_div"):
                                    P[J_indptr[i_0 * 4 + i_1] + (j_3_0 * 32 + j_3_1), h_3] = P[J_indptr[i_0 * 4 + i_1] + (j_3_0 * 32 + j_3_1), h_3] / SM_local[h_3]
                v5: T.int32 = i_0 * 4 + i_1
                for ax0 in T.unroll(1):
                    MX[v5, ax0] = MX_local[ax0]
                v6: T.int32 = i_0 * 4 + i_1
                for ax0_1 in T.unroll(1):
                    SM[v6, ax0_1] = SM_local[ax0_1]
