@T.prim_func
def sparse_attention(
    q: T.handle,
    k: T.handle,
    v: T.handle,
    out: T.handle,
    probs: T.handle,
    row_max: T.handle,
    row_sum: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    head_dim: T.int32,
    value_dim: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"head_dim": 64, "value_dim": 64}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (m, 64), "bfloat16")
    K = T.match_buffer(k, (n, 64), "bfloat16")
    V = T.match_buffer(v, (n, 64), "bfloat16")
    O = T.match_buffer(out, (m, 64), "bfloat16")
    P = T.match_buffer(probs, (nnz,), "bfloat16")
    MX = T.match_buffer(row_max, (m,), "bfloat16")
    SM = T.match_buffer(row_sum, (m,), "bfloat16")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + T.int64(32)) < T.Cast("int64", nnz):
                T.prefetch(K[J_indices[J_indptr[i] + (j + T.int64(32))], 0], 64)
            P_local = T.alloc_buffer((1,), "bfloat16", scope="local")
            with T.block("scores_init"):
                P_local[0] = T.bfloat16(0.0)
            P_local_rf = T.alloc_buffer((8,), "bfloat16", scope="local")
            for d_1_init in T.serial(8):
                P_local_rf[d_1_init] = T.bfloat16(0.0)
            v1: T.int64 = J_indices[J_indptr[i] + j]
            for d_0 in T.unroll(8):
                for d_1 in T.vectorized(8):
                    with T.block("scores"):
                        P_local_rf[d_1] = P_local_rf[d_1] + Q[i, d_0 * 8 + d_1] * K[v1, d_0 * 8 + d_1]
            for d_1_tree in T.vectorized(4):
                P_local_rf[d_1_tree] = P_local_rf[d_1_tree] + P_local_rf[d_1_tree + 4]
            for d_1_tree_1 in T.vectorized(2):
                P_local_rf[d_1_tree_1] = P_local_rf[d_1_tree_1] + P_local_rf[d_1_tree_1 + 2]
            for d_1_tree_2 in T.serial(1):
                P_local_rf[d_1_tree_2] = P_local_rf[d_1_tree_2] + P_local_rf[d_1_tree_2 + 1]
            P_local[0] = P_local[0] + P_local_rf[0]
            P[J_indptr[i] + j] = P_local[0]
    for i_1 in T.parallel(m):
        with T.block("row_max_init"):
            MX[i_1] = T.bfloat16(-T.inf)
        for j_1 in T.serial(J_indptr[i_1 + 1] - J_indptr[i_1]):
            with T.block("row_max"):
                MX[i_1] = T.max(MX[i_1], P[J_indptr[i_1] + j_1])
    for i_2 in T.parallel(m):
        for j_2 in T.serial(J_indptr[i_2 + 1] - J_indptr[i_2]):
            with T.block("row_exp"):
                P[J_indptr[i_2] + j_2] = T.exp(P[J_indptr[i_2] + j_2] - MX[i_2])
    for i_3 in T.parallel(m):
        with T.block("row_sum_init"):
            SM[i_3] = T.bfloat16(0.0)
        for j_3 in T.serial(J_indptr[i_3 + 1] - J_indptr[i_3]):
            with T.block("row_sum"):
                SM[i_3] = SM[i_3] + P[J_indptr[i_3] + j_3]
    for i_4 in T.parallel(m):
        for j_4 in T.serial(J_indptr[i_4 + 1] - J_indptr[i_4]):
            with T.block("row_div"):
                P[J_indptr[i_4] + j_4] = P[J_indptr[i_4] + j_4] / SM[i_4]
    for i_5 in T.parallel(m):
        O_local = T.alloc_buffer((64,), "bfloat16", scope="local")
        for dv_init in T.serial(64):
            with T.block("weighted_sum_init"):
                O_local[dv_init] = T.bfloat16(0.0)
        for j_5 in T.serial(J_indptr[i_5 + 1] - J_indptr[i_5]):
            if J_indptr[i_5] + (j_5 + T.int64(32)) < T.Cast("int64", nnz):
                T.prefetch(V[J_indices[J_indptr[i_5] + (j_5 + T.int64(32))], 0], 64)
            v4: T.int64 = J_indptr[i_5] + j_5
            v5: T.int64 = J_indices[v4]
            for dv_0 in T.unroll(8):
                for dv_1 in T.vectorized(8):
                    with T.block("weighted_sum"):
                        O_local[dv_0 * 8 + dv_1] = O_local[dv_0 * 8 + dv_1] + P[v4] * V[v5, dv_0 * 8 + dv_1]
        for ax0_o in T.unroll(8):
            for ax0_i in T.vectorized(8):
                O[i_5, ax0_o * 8 + ax0_i] = O_local[ax0_o * 8 + ax0_i]
