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
    for i in T.parallel(m):
        for h_init in T.serial(1):
            with T.block("row_max_init"):
                MX[i, h_init] = T.float32(-T.inf)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v0: T.int32 = J_indptr[i] + j
            for h in T.serial(1):
                with T.block("row_max"):
                    MX[i, h] = T.max(MX[i, h], S[v0, h])
        for j_1_h_1_fused in T.vectorized(J_indptr[i + 1] - J_indptr[i]):
            with T.block("row_exp"):
                P[J_indptr[i] + j_1_h_1_fused, 0] = T.exp(S[J_indptr[i] + j_1_h_1_fused, 0] - MX[i, 0])
        for h_2_init in T.serial(1):
            with T.block("row_sum_init"):
                SM[i, h_2_init] = T.float32(0.0)
        for j_2 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v1: T.int32 = J_indptr[i] + j_2
            for h_2 in T.serial(1):
                with T.block("row_sum"):
                    SM[i, h_2] = SM[i, h_2] + P[v1, h_2]
        for j_3_h_3_fused in T.vectorized(J_indptr[i + 1] - J_indptr[i]):
            with T.block("row_div"):
                P[J_indptr[i] + j_3_h_3_fused, 0] = P[J_indptr[i] + j_3_h_3_fused, 0] / SM[i, 0]
