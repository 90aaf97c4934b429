@T.prim_func
def sparse_attention_online(
    q: T.handle,
    k: T.handle,
    v: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    heads: T.int32,
    head_dim: T.int32,
    value_dim: T.int32,
) -> None:
    # Sparse attention of every head on cuda in one pass over each row's
    # allowed columns (q is already scaled): out_i = sum_j softmax_j(q_i . k_j) v_j.
    # A warp per (row, head), four rows per block, its 32 lanes over the
    # features. For each column j the lanes sum their parts of q_i . k_j with
    # shuffles (T.sp.lane_sum: every lane gets the score); the row's running
    # max MX, sum of exponentials SM and weighted sum of v rows ACC (each lane
    # its features) are rescaled by exp(old max - new max) when the max grows
    # (the online softmax), so no score or probability goes to memory. A row
    # without allowed columns gives zeros. The loops are bound here: this is a
    # stage-III script, its own schedule.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, head_dim), "float32")
    K = T.match_buffer(k, (heads, n, head_dim), "float32")
    V = T.match_buffer(v, (heads, n, value_dim), "float32")
    O = T.match_buffer(out, (heads, m, value_dim), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(4, thread="threadIdx.y"):
                i: T.int32 = row_block * 4 + warp
                if i < m:
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        MX = T.alloc_buffer((1,), "float32", scope="local")
                        SM = T.alloc_buffer((1,), "float32", scope="local")
                        DOT = T.alloc_buffer((1,), "float32", scope="local")
                        ACC = T.alloc_buffer(((value_dim + 31) // 32,), "float32", scope="local")
                        MX[0] = -T.inf
                        SM[0] = T.float32(0.0)
                        for t in T.unroll((value_dim + 31) // 32):
                            ACC[t] = T.float32(0.0)
                        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
                            col: T.int32 = J_indices[J_indptr[i] + j]
                            DOT[0] = T.float32(0.0)
                            for t in T.unroll((head_dim + 31) // 32):
                                if t * 32 + lane < head_dim:
                                    DOT[0] = DOT[0] + Q[h, i, t * 32 + lane] * K[h, col, t * 32 + lane]
                            score: T.float32 = T.sp.lane_sum(DOT[0], 32)
                            grown: T.float32 = T.max(MX[0], score)
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            weight: T.float32 = T.exp(score - grown)
                            SM[0] = SM[0] * rescale + weight
                            for t in T.unroll((value_dim + 31) // 32):
                                if t * 32 + lane < value_dim:
                                    ACC[t] = ACC[t] * rescale + weight * V[h, col, t * 32 + lane]
                            MX[0] = grown
                        for t in T.unroll((value_dim + 31) // 32):
                            if t * 32 + lane < value_dim:
                                O[h, i, t * 32 + lane] = T.if_then_else(SM[0] > T.float32(0.0), ACC[t] / SM[0], T.float32(0.0))
