@T.prim_func
def gat_attention(
    a_dst: T.handle,
    a_src: T.handle,
    x: T.handle,
    slope: T.handle,
    out: T.handle,
    probs: T.handle,
    row_max: T.handle,
    row_sum: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    heads: T.int32,
    feat_size: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 1, "heads": 8}, "sparse_tir_level": 0})
    AD = T.match_buffer(a_dst, (m, 8), "float32")
    AS = T.match_buffer(a_src, (n, 8), "float32")
    X = T.match_buffer(x, (n, 8, 1), "float32")
    NS = T.match_buffer(slope, (1,), "float32")
    O = T.match_buffer(out, (m, 8, 1), "float32")
    P = T.match_buffer(probs, (nnz, 8), "float32")
    MX = T.match_buffer(row_max, (m, 8), "float32")
    SM = T.match_buffer(row_sum, (m, 8), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 127) // 128, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            if i_0 * 128 + i_1 < m:
                v3: T.int32 = i_0 * 128 + i_1
                for j in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v0: T.int32 = J_indptr[v3] + j
                    v2: T.int32 = J_indices[v0]
                    for h in T.serial(8):
                        with T.block("row_score"):
                            P[v0, h] = T.max(AD[v3, h] + AS[v2, h], T.float32(0.0)) + NS[0] * T.min(AD[v3, h] + AS[v2, h], T.float32(0.0))
                v4: T.int32 = i_0 * 128 + i_1
                for h_1_init in T.serial(8):
                    with T.block("row_max_init"):
                        MX[v4, h_1_init] = T.float32(-T.inf)
                v7: T.int32 = i_0 * 128 + i_1
                for j_1 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v6: T.int32 = J_indptr[v7] + j_1
                    for h_1 in T.serial(8):
                        with T.block("row_max"):
                            MX[v7, h_1] = T.max(MX[v7, h_1], P[v6, h_1])
                v10: T.int32 = i_0 * 128 + i_1
                for j_2 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v8: T.int32 = J_indptr[v10] + j_2
                    for h_2 in T.serial(8):
                        with T.block("row_exp"):
                            P[v8, h_2] = T.exp(P[v8, h_2] - MX[v10, h_2])
                v11: T.int32 = i_0 * 128 + i_1
                for h_3_init in T.serial(8):
                    with T.block("row_sum_init"):
                        SM[v11, h_3_init] = T.float32(0.0)
                v14: T.int32 = i_0 * 128 + i_1
                for j_3 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v13: T.int32 = J_indptr[v14] + j_3
                    for h_3 in T.serial(8):
                        with T.block("row_sum"):
                            SM[v14, h_3] = SM[v14, h_3] + P[v13, h_3]
                v17: T.int32 = i_0 * 128 + i_1
                for j_4 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v15: T.int32 = J_indptr[v17] + j_4
                    for h_4 in T.serial(8):
                        with T.block("row_div"):
                            P[v15, h_4] = P[v15, h_4] / SM[v17, h_4]
                v19: T.int32 = i_0 * 128 + i_1
                for h_5_init in T.serial(8):
                    for k_init in T.serial(1):
                        with T.block("aggregate_init"):
                            O[v19, h_5_init, k_init] = T.float32(0.0)
                v26: T.int32 = i_0 * 128 + i_1
                for j_5 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v24: T.int32 = J_indptr[v26] + j_5
                    v25: T.int32 = J_indices[v24]
                    for h_5 in T.serial(8):
                        for k in T.serial(1):
                            with T.block("aggregate"):
                                O[v26, h_5, k] = O[v26, h_5, k] + P[v24, h_5] * X[v25, h_5, k]
