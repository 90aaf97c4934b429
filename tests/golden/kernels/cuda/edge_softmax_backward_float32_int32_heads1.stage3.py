@T.prim_func
def edge_softmax_backward(
    probs: T.handle,
    grad_probs: T.handle,
    grad_scores: T.handle,
    row_dot: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    heads: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"heads": 1}, "sparse_tir_level": 0})
    P = T.match_buffer(probs, (nnz, 1), "float32")
    DP = T.match_buffer(grad_probs, (nnz, 1), "float32")
    DS = T.match_buffer(grad_scores, (nnz, 1), "float32")
    RD = T.match_buffer(row_dot, (m, 1), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 127) // 128, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            if i_0 * 128 + i_1 < m:
                v0: T.int32 = i_0 * 128 + i_1
                for h_init in T.serial(1):
                    with T.block("row_dot_init"):
                        RD[v0, h_init] = T.float32(0.0)
                v3: T.int32 = i_0 * 128 + i_1
                for j in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v2: T.int32 = J_indptr[v3] + j
                    for h in T.serial(1):
                        with T.block("row_dot"):
                            RD[v3, h] = RD[v3, h] + P[v2, h] * DP[v2, h]
                v6: T.int32 = i_0 * 128 + i_1
                for j_1 in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    v4: T.int32 = J_indptr[v6] + j_1
                    for h_1 in T.serial(1):
                        with T.block("grad_scores"):
                            DS[v4, h_1] = P[v4, h_1] * (DP[v4, h_1] - RD[v6, h_1])
