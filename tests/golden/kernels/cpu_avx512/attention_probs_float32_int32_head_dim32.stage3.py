@T.prim_func
def attention_probs(
    q: T.handle,
    k: T.handle,
    probs: T.handle,
    row_max: T.handle,
    row_sum: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    head_dim: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"head_dim": 32}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (m, 32), "float32")
    K = T.match_buffer(k, (n, 32), "float32")
    P = T.match_buffer(probs, (nnz,), "float32")
    MX = T.match_buffer(row_max, (m,), "float32")
    SM = T.match_buffer(row_sum, (m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + 32) < nnz:
                T.prefetch(K[J_indices[J_indptr[i] + (j + 32)], 0], 32)
            P_local = T.alloc_buffer((1,), "float32", scope="local")
            with T.block("scores_init"):
                P_local[0] = T.float32(0.0)
            P_local_rf = T.alloc_buffer((16,), "float32", scope="local")
            for d_1_init in T.serial(16):
                P_local_rf[d_1_init] = T.float32(0.0)
            v1: T.int32 = J_indices[J_indptr[i] + j]
            for d_0 in T.unroll(2):
                for d_1 in T.vectorized(16):
                    with T.block("scores"):
                        P_local_rf[d_1] = P_local_rf[d_1] + Q[i, d_0 * 16 + d_1] * K[v1, d_0 * 16 + d_1]
            for d_1_tree in T.vectorized(8):
                P_local_rf[d_1_tree] = P_local_rf[d_1_tree] + P_local_rf[d_1_tree + 8]
            for d_1_tree_1 in T.vectorized(4):
                P_local_rf[d_1_tree_1] = P_local_rf[d_1_tree_1] + P_local_rf[d_1_tree_1 + 4]
            for d_1_tree_2 in T.vectorized(2):
                P_local_rf[d_1_tree_2] = P_local_rf[d_1_tree_2] + P_local_rf[d_1_tree_2 + 2]
            for d_1_tree_3 in T.serial(1):
                P_local_rf[d_1_tree_3] = P_local_rf[d_1_tree_3] + P_local_rf[d_1_tree_3 + 1]
            P_local[0] = P_local[0] + P_local_rf[0]
            P[J_indptr[i] + j] = P_local[0]
    for i_1 in T.parallel(m):
        with T.block("row_max_init"):
            MX[i_1] = T.float32(-T.inf)
        for j_1 in T.serial(J_indptr[i_1 + 1] - J_indptr[i_1]):
            with T.block("row_max"):
                MX[i_1] = T.max(MX[i_1], P[J_indptr[i_1] + j_1])
    for i_2 in T.parallel(m):
        for j_2 in T.serial(J_indptr[i_2 + 1] - J_indptr[i_2]):
            with T.block("row_exp"):
                P[J_indptr[i_2] + j_2] = T.exp(P[J_indptr[i_2] + j_2] - MX[i_2])
    for i_3 in T.parallel(m):
        with T.block("row_sum_init"):
            SM[i_3] = T.float32(0.0)
        for j_3 in T.serial(J_indptr[i_3 + 1] - J_indptr[i_3]):
            with T.block("row_sum"):
                SM[i_3] = SM[i_3] + P[J_indptr[i_3] + j_3]
    for i_4 in T.parallel(m):
        for j_4 in T.serial(J_indptr[i_4 + 1] - J_indptr[i_4]):
            with T.block("row_div"):
                P[J_indptr[i_4] + j_4] = P[J_indptr[i_4] + j_4] / SM[i_4]
