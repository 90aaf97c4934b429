@T.prim_func
def sparse_attention_online(
    q: T.handle,
    k: T.handle,
    v: T.handle,
    out: T.handle,
    lse: T.handle,
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
    # q is in the accumulator's dtype (T.float32: float32 for 16-bit values),
    # k, v and out in the values' (16-bit ones read and written as such, the
    # output rounded once). A warp per (row, head), four rows per block, its
    # 32 lanes over the features; a lane keeps its features of q_i in
    # registers (QL). The
    # columns go four at a time: the lanes sum their parts of the four scores
    # with shuffles (T.sp.lane_sum: every lane gets each score), so that four
    # rows of k are in flight at once; then the row's running max MX, sum of
    # exponentials SM and weighted sum of v rows ACC (each lane its features)
    # are rescaled by exp(old max - new max) if the max grew (the online
    # softmax), and the four columns added. No score or probability goes to
    # memory but the row's log-sum-exp MX + log(SM) (LSE, in the accumulator's
    # dtype; -inf for a row without columns), which the backward reads instead
    # of recomputing the softmax. A column past the row's end scores -inf and
    # adds nothing; a row without allowed columns gives zeros. The loops are
    # bound here: this is a stage-III script, its own schedule.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, head_dim), T.float32)
    K = T.match_buffer(k, (heads, n, head_dim), "float32")
    V = T.match_buffer(v, (heads, n, value_dim), "float32")
    O = T.match_buffer(out, (heads, m, value_dim), "float32")
    LSE = T.match_buffer(lse, (heads, m), T.float32)
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
                        QL = T.alloc_buffer(((head_dim + 31) // 32,), T.float32, scope="local")
                        ACC = T.alloc_buffer(((value_dim + 31) // 32,), T.float32, scope="local")
                        MX = T.alloc_buffer((1,), T.float32, scope="local")
                        SM = T.alloc_buffer((1,), T.float32, scope="local")
                        COL = T.alloc_buffer((4,), "int32", scope="local")
                        DOT = T.alloc_buffer((4,), T.float32, scope="local")
                        SCORE = T.alloc_buffer((4,), T.float32, scope="local")
                        for t in T.unroll((head_dim + 31) // 32):
                            QL[t] = T.float32(0.0)
                            if t * 32 + lane < head_dim:
                                QL[t] = Q[h, i, t * 32 + lane]
                        for t in T.unroll((value_dim + 31) // 32):
                            ACC[t] = T.float32(0.0)
                        MX[0] = -T.inf
                        SM[0] = T.float32(0.0)
                        start: T.int32 = J_indptr[i]
                        length: T.int32 = J_indptr[i + 1] - start
                        for j in T.serial((length + 3) // 4):
                            for u in T.unroll(4):
                                COL[u] = J_indices[start + T.min(j * 4 + u, length - 1)]
                                DOT[u] = T.float32(0.0)
                                for t in T.unroll((head_dim + 31) // 32):
                                    if t * 32 + lane < head_dim:
                                        DOT[u] = DOT[u] + QL[t] * T.Cast(T.float32, K[h, COL[u], t * 32 + lane])
                            for u in T.unroll(4):
                                SCORE[u] = T.if_then_else(j * 4 + u < length, T.sp.lane_sum(DOT[u], 32), -T.inf)
                            grown: T.float32 = T.max(T.max(MX[0], T.max(SCORE[0], SCORE[1])), T.max(SCORE[2], SCORE[3]))
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale
                            for t in T.unroll((value_dim + 31) // 32):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(4):
                                weight: T.float32 = T.exp(SCORE[u] - grown)
                                SM[0] = SM[0] + weight
                                for t in T.unroll((value_dim + 31) // 32):
                                    if t * 32 + lane < value_dim:
                                        ACC[t] = ACC[t] + weight * T.Cast(T.float32, V[h, COL[u], t * 32 + lane])
                        norm: T.float32 = T.if_then_else(SM[0] > T.float32(0.0), T.float32(1.0) / SM[0], T.float32(0.0))
                        for t in T.unroll((value_dim + 31) // 32):
                            if t * 32 + lane < value_dim:
                                O[h, i, t * 32 + lane] = T.Cast("float32", ACC[t] * norm)
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(SM[0])
