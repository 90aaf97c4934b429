@T.prim_func
def attention_grad_scores(
    probs: T.handle,
    grad_probs: T.handle,
    out: T.handle,
    grad_out: T.handle,
    grad_scores: T.handle,
    row_dot: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    value_dim: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"value_dim": 16}, "sparse_tir_level": 0})
    P = T.match_buffer(probs, (nnz,), "float32")
    DP = T.match_buffer(grad_probs, (nnz,), "float32")
    O = T.match_buffer(out, (m, 16), "float32")
    DO = T.match_buffer(grad_out, (m, 16), "float32")
    DS = T.match_buffer(grad_scores, (nnz,), "float32")
    RD = T.match_buffer(row_dot, (m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 127) // 128, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.x"):
            if i_0 * 128 + i_1 < m:
                with T.block("row_dot_init"):
                    RD[i_0 * 128 + i_1] = T.float32(0.0)
                v0: T.int32 = i_0 * 128 + i_1
                for dv in T.serial(16):
                    with T.block("row_dot"):
                        RD[v0] = RD[v0] + DO[v0, dv] * O[v0, dv]
                v1: T.int32 = i_0 * 128 + i_1
                for j in T.serial(J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]):
                    with T.block("grad_scores"):
                        DS[J_indptr[v1] + j] = P[J_indptr[v1] + j] * (DP[J_indptr[v1] + j] - RD[v1])
