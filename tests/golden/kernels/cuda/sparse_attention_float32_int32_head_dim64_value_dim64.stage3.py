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
    Q = T.match_buffer(q, (m, 64), "float32")
    K = T.match_buffer(k, (n, 64), "float32")
    V = T.match_buffer(v, (n, 64), "float32")
    O = T.match_buffer(out, (m, 64), "float32")
    P = T.match_buffer(probs, (nnz,), "float32")
    MX = T.match_buffer(row_max, (m,), "float32")
    SM = T.match_buffer(row_sum, (m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 127) // 128, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            if i_0 * 128 + i_1 < m:
                v2: T.int32 = i_0 * 128 + i_1
                for j in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    P_local = T.alloc_buffer((1,), "float32", scope="local")
                    with T.block("scores_init"):
                        P_local[0] = T.float32(0.0)
                    v1: T.int32 = J_indices[J_indptr[v2] + j]
                    for d in T.serial(64):
                        with T.block("scores"):
                            P_local[0] = P_local[0] + Q[v2, d] * K[v1, d]
                    P[J_indptr[v2] + j] = P_local[0]
                with T.block("row_max_init"):
                    MX[i_0 * 128 + i_1] = T.float32(-T.inf)
                v3: T.int32 = i_0 * 128 + i_1
                for j_1 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    with T.block("row_max"):
                        MX[v3] = T.max(MX[v3], P[J_indptr[v3] + j_1])
                v4: T.int32 = i_0 * 128 + i_1
                for j_2 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    with T.block("row_exp"):
                        P[J_indptr[v4] + j_2] = T.exp(P[J_indptr[v4] + j_2] - MX[v4])
                with T.block("row_sum_init"):
                    SM[i_0 * 128 + i_1] = T.float32(0.0)
                v5: T.int32 = i_0 * 128 + i_1
                for j_3 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    with T.block("row_sum"):
                        SM[v5] = SM[v5] + P[J_indptr[v5] + j_3]
                v6: T.int32 = i_0 * 128 + i_1
                for j_4 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    with T.block("row_div"):
                        P[J_indptr[v6] + j_4] = P[J_indptr[v6] + j_4] / SM[v6]
                v7: T.int32 = i_0 * 128 + i_1
                for dv_init in T.serial(64):
                    with T.block("weighted_sum_init"):
                        O[v7, dv_init] = T.float32(0.0)
                v11: T.int32 = i_0 * 128 + i_1
                for j_5 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v9: T.int32 = J_indptr[v11] + j_5
                    v10: T.int32 = J_indices[J_indptr[v11] + j_5]
                    for dv in T.serial(64):
                        with T.block("weighted_sum"):
                            O[v11, dv] = O[v11, dv] + P[v9] * V[v10, dv]
