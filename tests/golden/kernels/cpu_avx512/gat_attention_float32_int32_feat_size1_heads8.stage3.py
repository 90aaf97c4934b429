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
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v2: T.int32 = J_indptr[i] + j
            v3: T.int32 = J_indices[v2]
            for h_0 in T.unroll(1):
                for h_1_1 in T.vectorized(8):
                    with T.block("row_score"):
                        P[v2, h_0 * 8 + h_1_1] = T.max(AD[i, h_0 * 8 + h_1_1] + AS[v3, h_0 * 8 + h_1_1], T.float32(0.0)) + NS[0] * T.min(AD[i, h_0 * 8 + h_1_1] + AS[v3, h_0 * 8 + h_1_1], T.float32(0.0))
        for h_1_init in T.serial(8):
            with T.block("row_max_init"):
                MX[i, h_1_init] = T.float32(-T.inf)
        for j_1 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v5: T.int32 = J_indptr[i] + j_1
            for h_1_0 in T.unroll(1):
                for h_1_1_1 in T.vectorized(8):
                    with T.block("row_max"):
                        MX[i, h_1_0 * 8 + h_1_1_1] = T.max(MX[i, h_1_0 * 8 + h_1_1_1], P[v5, h_1_0 * 8 + h_1_1_1])
        for j_2 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v7: T.int32 = J_indptr[i] + j_2
            for h_2_0 in T.unroll(1):
                for h_2_1 in T.vectorized(8):
                    with T.block("row_exp"):
                        P[v7, h_2_0 * 8 + h_2_1] = T.exp(P[v7, h_2_0 * 8 + h_2_1] - MX[i, h_2_0 * 8 + h_2_1])
        for h_3_init in T.serial(8):
            with T.block("row_sum_init"):
                SM[i, h_3_init] = T.float32(0.0)
        for j_3 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v9: T.int32 = J_indptr[i] + j_3
            for h_3_0 in T.unroll(1):
                for h_3_1 in T.vectorized(8):
                    with T.block("row_sum"):
                        SM[i, h_3_0 * 8 + h_3_1] = SM[i, h_3_0 * 8 + h_3_1] + P[v9, h_3_0 * 8 + h_3_1]
        for j_4 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v11: T.int32 = J_indptr[i] + j_4
            for h_4_0 in T.unroll(1):
                for h_4_1 in T.vectorized(8):
                    with T.block("row_div"):
                        P[v11, h_4_0 * 8 + h_4_1] = P[v11, h_4_0 * 8 + h_4_1] / SM[i, h_4_0 * 8 + h_4_1]
    for i_5 in T.parallel(m):
        O_local = T.alloc_buffer((8, 1), "float32", scope="local")
        for h_5_init in T.serial(8):
            for k_init in T.serial(1):
                with T.block("aggregate_init"):
                    O_local[h_5_init, k_init] = T.float32(0.0)
        for j_5 in T.serial(J_indptr[i_5 + 1] - J_indptr[i_5]):
            if J_indptr[i_5] + (j_5 + 32) < nnz:
                T.prefetch(X[J_indices[J_indptr[i_5] + (j_5 + 32)], 0, 0], 8)
            v14: T.int32 = J_indptr[i_5] + j_5
            v15: T.int32 = J_indices[v14]
            for h_5_k_fused_0 in T.unroll(1):
                for h_5_k_fused_1 in T.vectorized(8):
                    with T.block("aggregate"):
                        O_local[h_5_k_fused_0 * 8 + h_5_k_fused_1, 0] = O_local[h_5_k_fused_0 * 8 + h_5_k_fused_1, 0] + P[v14, h_5_k_fused_0 * 8 + h_5_k_fused_1] * X[v15, h_5_k_fused_0 * 8 + h_5_k_fused_1, 0]
        for ax0 in T.unroll(8):
            for ax1 in T.unroll(1):
                O[i_5, ax0, ax1] = O_local[ax0, ax1]
