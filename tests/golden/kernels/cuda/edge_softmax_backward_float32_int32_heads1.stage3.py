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
    for i_0 in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(4, thread="threadIdx.y"):
            if i_0 * 4 + i_1 < m:
                RD_local = T.alloc_buffer((1,), "float32", scope="local")
                for h_init in T.serial(1):
                    with T.block("row_dot_init"):
                        RD_local[h_init] = T.float32(0.0)
                v0: T.int32 = (J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1] + 31) // 32
                for h in T.serial(1):
                    for j_0 in T.serial(v0):
                        for j_1_1 in T.thread_binding(32, thread="threadIdx.x"):
                            if j_0 * 32 + j_1_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                with T.block("row_dot"):
                                    RD_local[h] = RD_local[h] + P[J_indptr[i_0 * 4 + i_1] + (j_0 * 32 + j_1_1), h] * DP[J_indptr[i_0 * 4 + i_1] + (j_0 * 32 + j_1_1), h]
                v1: T.int32 = (J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1] + 31) // 32
                for h_1 in T.serial(1):
                    for j_1_0 in T.serial(v1):
                        for j_1_1_1 in T.thread_binding(32, thread="threadIdx.x"):
                            if j_1_0 * 32 + j_1_1_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                with T.block("grad_scores"):
                                    DS[J_indptr[i_0 * 4 + i_1] + (j_1_0 * 32 + j_1_1_1), h_1] = P[J_indptr[i_0 * 4 + i_1] + (j_1_0 * 32 + j_1_1_1), h_1] * (DP[J_indptr[i_0 * 4 + i_1] + (j_1_0 * 32 + j_1_1_1), h_1] - RD_local[h_1])
                v2: T.int32 = i_0 * 4 + i_1
                for ax0 in T.unroll(1):
                    RD[v2, ax0] = RD_local[ax0]
