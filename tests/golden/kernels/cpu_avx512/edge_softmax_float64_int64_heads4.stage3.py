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
    for i in T.parallel(m):
        for h_init in T.serial(4):
            with T.block("row_max_init"):
                MX[i, h_init] = T.float64(-T.inf)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v1: T.int64 = J_indptr[i] + j
            for h_0 in T.unroll(1):
                for h_1_1 in T.vectorized(4):
                    with T.block("row_max"):
                        MX[i, h_0 * 4 + h_1_1] = T.max(MX[i, h_0 * 4 + h_1_1], S[v1, h_0 * 4 + h_1_1])
        for j_1 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v3: T.int64 = J_indptr[i] + j_1
            for h_1_0 in T.unroll(1):
                for h_1_1_1 in T.vectorized(4):
                    with T.block("row_exp"):
                        P[v3, h_1_0 * 4 + h_1_1_1] = T.exp(S[v3, h_1_0 * 4 + h_1_1_1] - MX[i, h_1_0 * 4 + h_1_1_1])
        for h_2_init in T.serial(4):
            with T.block("row_sum_init"):
                SM[i, h_2_init] = T.float64(0.0)
        for j_2 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v5: T.int64 = J_indptr[i] + j_2
            for h_2_0 in T.unroll(1):
                for h_2_1 in T.vectorized(4):
                    with T.block("row_sum"):
                        SM[i, h_2_0 * 4 + h_2_1] = SM[i, h_2_0 * 4 + h_2_1] + P[v5, h_2_0 * 4 + h_2_1]
        for j_3 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v7: T.int64 = J_indptr[i] + j_3
            for h_3_0 in T.unroll(1):
                for h_3_1 in T.vectorized(4):
                    with T.block("row_div"):
                        P[v7, h_3_0 * 4 + h_3_1] = P[v7, h_3_0 * 4 + h_3_1] / SM[i, h_3_0 * 4 + h_3_1]
