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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 5, "heads": 3}, "sparse_tir_level": 0})
    AD = T.match_buffer(a_dst, (m, 3), "float32")
    AS = T.match_buffer(a_src, (n, 3), "float32")
    X = T.match_buffer(x, (n, 3, 5), "float32")
    NS = T.match_buffer(slope, (1,), "float32")
    O = T.match_buffer(out, (m, 3, 5), "float32")
    P = T.match_buffer(probs, (nnz, 3), "float32")
    MX = T.match_buffer(row_max, (m, 3), "float32")
    SM = T.match_buffer(row_sum, (m, 3), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v0: T.int32 = J_indptr[i] + j
            v1: T.int32 = J_indices[v0]
            for h in T.serial(3):
                with T.block("row_score"):
                    P[v0, h] = T.max(AD[i, h] + AS[v1, h], T.float32(0.0)) + NS[0] * T.min(AD[i, h] + AS[v1, h], T.float32(0.0))
        for h_1_init in T.serial(3):
            with T.block("row_max_init"):
                MX[i, h_1_init] = T.float32(-T.inf)
        for j_1 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v2: T.int32 = J_indptr[i] + j_1
            for h_1 in T.serial(3):
                with T.block("row_max"):
                    MX[i, h_1] = T.max(MX[i, h_1], P[v2, h_1])
        for j_2 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v3: T.int32 = J_indptr[i] + j_2
            for h_2 in T.serial(3):
                with T.block("row_exp"):
                    P[v3, h_2] = T.exp(P[v3, h_2] - MX[i, h_2])
        for h_3_init in T.serial(3):
            with T.block("row_sum_init"):
                SM[i, h_3_init] = T.float32(0.0)
        for j_3 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v4: T.int32 = J_indptr[i] + j_3
            for h_3 in T.serial(3):
                with T.block("row_sum"):
                    SM[i, h_3] = SM[i, h_3] + P[v4, h_3]
        for j_4 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v5: T.int32 = J_indptr[i] + j_4
            for h_4 in T.serial(3):
                with T.block("row_div"):
                    P[v5, h_4] = P[v5, h_4] / SM[i, h_4]
    for i_5 in T.parallel(m):
        O_local = T.alloc_buffer((3, 5), "float32", scope="local")
        for h_5_init in T.serial(3):
            for k_init in T.serial(5):
                with T.block("aggregate_init"):
                    O_local[h_5_init, k_init] = T.float32(0.0)
        for j_5 in T.serial(J_indptr[i_5 + 1] - J_indptr[i_5]):
            if J_indptr[i_5] + (j_5 + 32) < nnz:
                T.prefetch(X[J_indices[J_indptr[i_5] + (j_5 + 32)], 0, 0], 15)
            v8: T.int32 = J_indptr[i_5] + j_5
            v9: T.int32 = J_indices[v8]
            for h_5 in T.serial(3):
                for k in T.serial(5):
                    with T.block("aggregate"):
                        O_local[h_5, k] = O_local[h_5, k] + P[v8, h_5] * X[v9, h_5, k]
        for ax0 in T.unroll(3):
            for ax1 in T.unroll(5):
                O[i_5, ax0, ax1] = O_local[ax0, ax1]
