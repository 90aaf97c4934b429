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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"heads": 4}, "sparse_tir_level": 0})
    S = T.match_buffer(scores, (nnz, 4), "float64")
    P = T.match_buffer(probs, (nnz, 4), "float64")
    MX = T.match_buffer(row_max, (m, 4), "float64")
    SM = T.match_buffer(row_sum, (m, 4), "float64")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 127) // 128, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            if i_0 * 128 + i_1 < m:
                v0: T.int32 = i_0 * 128 + i_1
                for h_init in T.serial(4):
                    with T.block("row_max_init"):
                        MX[v0, h_init] = T.float64(-T.inf)
                v3: T.int32 = i_0 * 128 + i_1
                for j in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v2: T.int64 = J_indptr[v3] + j
                    for h in T.serial(4):
                        with T.block("row_max"):
                            MX[v3, h] = T.max(MX[v3, h], S[v2, h])
                v6: T.int32 = i_0 * 128 + i_1
                for j_1 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v4: T.int64 = J_indptr[v6] + j_1
                    for h_1 in T.serial(4):
                        with T.block("row_exp"):
                            P[v4, h_1] = T.exp(S[v4, h_1] - MX[v6, h_1])
                v7: T.int32 = i_0 * 128 + i_1
                for h_2_init in T.serial(4):
                    with T.block("row_sum_init"):
                        SM[v7, h_2_init] = T.float64(0.0)
                v10: T.int32 = i_0 * 128 + i_1
                for j_2 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v9: T.int64 = J_indptr[v10] + j_2
                    for h_2 in T.serial(4):
                        with T.block("row_sum"):
                            SM[v10, h_2] = SM[v10, h_2] + P[v9, h_2]
                v13: T.int32 = i_0 * 128 + i_1
                for j_3 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v11: T.int64 = J_indptr[v13] + j_3
                    for h_3 in T.serial(4):
                        with T.block("row_div"):
                            P[v11, h_3] = P[v11, h_3] / SM[v13, h_3]
