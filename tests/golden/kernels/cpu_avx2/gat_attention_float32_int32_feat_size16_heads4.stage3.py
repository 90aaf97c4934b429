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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 16, "heads": 4}, "sparse_tir_level": 0})
    AD = T.match_buffer(a_dst, (m, 4), "float32")
    AS = T.match_buffer(a_src, (n, 4), "float32")
    X = T.match_buffer(x, (n, 4, 16), "float32")
    NS = T.match_buffer(slope, (1,), "float32")
    O = T.match_buffer(out, (m, 4, 16), "float32")
    P = T.match_buffer(probs, (nnz, 4), "float32")
    MX = T.match_buffer(row_max, (m, 4), "float32")
    SM = T.match_buffer(row_sum, (m, 4), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        O_local = T.alloc_buffer((4, 16), "float32", scope="local")
        for h_init in T.serial(4):
            with T.block("row_max_init"):
                MX[i, h_init] = T.float32(-T.inf)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            for h in T.serial(4):
                with T.block("row_max"):
                    MX[i, h] = T.max(MX[i, h], T.Select(AD[i, h] + AS[J_indices[J_indptr[i] + j], h] > T.float32(0.0), AD[i, h] + AS[J_indices[J_indptr[i] + j], h], (AD[i, h] + AS[J_indices[J_indptr[i] + j], h]) * NS[0]))
        for j_1 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v0: T.int32 = J_indptr[i] + j_1
            for h_1 in T.serial(4):
                with T.block("row_exp"):
                    P[v0, h_1] = T.exp(T.Select(AD[i, h_1] + AS[J_indices[J_indptr[i] + j_1], h_1] > T.float32(0.0), AD[i, h_1] + AS[J_indices[J_indptr[i] + j_1], h_1], (AD[i, h_1] + AS[J_indices[J_indptr[i] + j_1], h_1]) * NS[0]) - MX[i, h_1])
        for h_2_init in T.serial(4):
            with T.block("row_sum_init"):
                SM[i, h_2_init] = T.float32(0.0)
        for j_2 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v1: T.int32 = J_indptr[i] + j_2
            for h_2 in T.serial(4):
                with T.block("row_sum"):
                    SM[i, h_2] = SM[i, h_2] + P[v1, h_2]
        for j_3 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v2: T.int32 = J_indptr[i] + j_3
            for h_3 in T.serial(4):
                with T.block("row_div"):
                    P[v2, h_3] = P[v2, h_3] / SM[i, h_3]
        for h_4_init in T.serial(4):
            for k_init in T.serial(16):
                with T.block("aggregate_init"):
                    O_local[h_4_init, k_init] = T.float32(0.0)
        for j_4 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j_4 + 32) < nnz:
                T.prefetch(X[J_indices[J_indptr[i] + (j_4 + 32)], 0, 0], 64)
            v7: T.int32 = J_indptr[i] + j_4
            v8: T.int32 = J_indices[v7]
            for h_4 in T.unroll(4):
                for k_0 in T.unroll(2):
                    for k_1 in T.vectorized(8):
                        with T.block("aggregate"):
                            O_local[h_4, k_0 * 8 + k_1] = O_local[h_4, k_0 * 8 + k_1] + P[v7, h_4] * X[v8, h_4, k_0 * 8 + k_1]
        for ax0 in T.serial(4):
            for ax1_o in T.unroll(2):
                for ax1_i in T.vectorized(8):
                    O[i, ax0, ax1_o * 8 + ax1_i] = O_local[ax0, ax1_o * 8 + ax1_i]
