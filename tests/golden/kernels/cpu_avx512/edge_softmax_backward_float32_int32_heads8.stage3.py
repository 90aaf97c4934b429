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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"heads": 8}, "sparse_tir_level": 0})
    P = T.match_buffer(probs, (nnz, 8), "float32")
    DP = T.match_buffer(grad_probs, (nnz, 8), "float32")
    DS = T.match_buffer(grad_scores, (nnz, 8), "float32")
    RD = T.match_buffer(row_dot, (m, 8), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for h_init in T.serial(8):
            with T.block("row_dot_init"):
                RD[i, h_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v0: T.int32 = J_indptr[i] + j
            for h in T.serial(8):
                with T.block("row_dot"):
                    RD[i, h] = RD[i, h] + P[v0, h] * DP[v0, h]
        for j_1 in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v1: T.int32 = J_indptr[i] + j_1
            for h_1 in T.serial(8):
                with T.block("grad_scores"):
                    DS[v1, h_1] = P[v1, h_1] * (DP[v1, h_1] - RD[i, h_1])
