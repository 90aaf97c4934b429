@T.prim_func
def sparse_attention_backward_online_columns(
    q: T.handle,
    k: T.handle,
    v: T.handle,
    out: T.handle,
    grad_out: T.handle,
    lse: T.handle,
    grad_q: T.handle,
    probs: T.handle,
    grad_scores: T.handle,
    indptr: T.handle,
    indices: T.handle,
    positions: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    heads: T.int32,
    head_dim: T.int32,
    value_dim: T.int32,
    has_lse: T.int32,
    column_lanes: T.int32,
) -> None:
    # The backward of sparse attention on cuda, every head, as
    # sparse_attention_backward_online.py, with the columns spread over the
    # lanes as in sparse_attention_online_columns.py: a warp per (row, head),
    # each group of `column_lanes` lanes on its own column, 32 / column_lanes
    # columns a step (q is already scaled; everything is in the compute
    # dtype). A lane keeps its run of head_dim / column_lanes features of q_i
    # (QL) and of value_dim / column_lanes features of dO_i (GL). With
    # has_lse, the forward's row log-sum-exp (LSE) stands for the softmax's
    # max MX (and SM = 1); without, a first pass recomputes MX and the sum SM
    # online. rowdot = dO_i . O_i.
    # A second pass recomputes each score from the lane's run of the k row
    # (KL), P_ij = exp(s - MX) / SM and dP_ij = dO_i . v_j from its run of the
    # v row (VL; both runs in vector loads where the lanes' runs are equal),
    # each summed over the group; dS_ij = P_ij (dP_ij - rowdot). The
    # group's first lane writes P and dS (for dk = dS^T q and dv = P^T dO,
    # which the host computes over the transposed pattern: at the non-zero's
    # place there, J_positions, as the warp-per-column backward), and each lane adds
    # dS_ij times its run of k_j into DQL. At the row's end the groups' DQL
    # are summed by shuffles between lanes that hold the same features (a
    # rotation by column_lanes, then 2, 4, ... times it) and the first group
    # writes dq_i (the scale is the host's). Lane operations are bound to
    # names before a condition uses them: every lane must reach each of them.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, head_dim), "float32")
    K = T.match_buffer(k, (heads, n, head_dim), "float32")
    V = T.match_buffer(v, (heads, n, value_dim), "float32")
    O = T.match_buffer(out, (heads, m, value_dim), "float32")
    DO = T.match_buffer(grad_out, (heads, m, value_dim), "float32")
    LSE = T.match_buffer(lse, (heads, m), "float32")
    DQ = T.match_buffer(grad_q, (heads, m, head_dim), "float32")
    P = T.match_buffer(probs, (nnz, heads), "float32")
    DS = T.match_buffer(grad_scores, (nnz, heads), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    J_positions = T.match_buffer(positions, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    T.assume_buffer_domain(J_positions, [0, nnz - 1])
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(4, thread="threadIdx.y"):
                i: T.int32 = row_block * 4 + warp
                if i < m:
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        QL = T.alloc_buffer(((head_dim + column_lanes - 1) // column_lanes,), "float32", scope="local")
                        KL = T.alloc_buffer(((head_dim + column_lanes - 1) // column_lanes,), "float32", scope="local")
                        DQL = T.alloc_buffer(((head_dim + column_lanes - 1) // column_lanes,), "float32",
                                             scope="local")
                        GL = T.alloc_buffer(((value_dim + column_lanes - 1) // column_lanes,), "float32",
                                            scope="local")
                        VL = T.alloc_buffer(((value_dim + column_lanes - 1) // column_lanes,), "float32",
                                            scope="local")
                        MX = T.alloc_buffer((1,), "float32", scope="local")
                        SM = T.alloc_buffer((1,), "float32", scope="local")
                        DOT = T.alloc_buffer((1,), "float32", scope="local")
                        OFFSET = T.alloc_buffer((1,), T.int32, scope="local")
                        part: T.int32 = lane % column_lanes
                        first: T.int32 = part * ((head_dim + column_lanes - 1) // column_lanes)
                        first_v: T.int32 = part * ((value_dim + column_lanes - 1) // column_lanes)
                        for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                            QL[t] = T.float32(0.0)
                            DQL[t] = T.float32(0.0)
                            if first + t < head_dim:
                                QL[t] = Q[h, i, first + t]
                        DOT[0] = T.float32(0.0)
                        for t in T.unroll((value_dim + column_lanes - 1) // column_lanes):
                            GL[t] = T.float32(0.0)
                            if first_v + t < value_dim:
                                GL[t] = DO[h, i, first_v + t]
                                DOT[0] = DOT[0] + GL[t] * O[h, i, first_v + t]
                        # Each feature of dO_i . O_i once: the first group's lanes.
                        rowdot: T.float32 = T.sp.lane_sum(T.if_then_else(lane < column_lanes, DOT[0], 0.0), 32)
                        MX[0] = -T.inf
                        SM[0] = T.float32(0.0)
                        start: T.int32 = J_indptr[i]
                        length: T.int32 = J_indptr[i + 1] - start
                        steps: T.int32 = (length + 32 // column_lanes - 1) // (32 // column_lanes)
                        for j in T.serial(T.if_then_else(has_lse != 0, 0, steps)):
                            position: T.int32 = j * (32 // column_lanes) + lane // column_lanes
                            col: T.int32 = J_indices[start + T.min(position, length - 1)]
                            DOT[0] = T.float32(0.0)
                            for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                if first + t < head_dim:
                                    DOT[0] = DOT[0] + QL[t] * K[h, col, first + t]
                            dot: T.float32 = T.sp.lane_sum(DOT[0], column_lanes)
                            score: T.float32 = T.if_then_else(position < length, dot, -T.inf)
                            step_max: T.float32 = T.sp.lane_max(score, 32)
                            grown: T.float32 = T.max(MX[0], step_max)
                            weight: T.float32 = T.exp(score - grown)
                            step_sum: T.float32 = T.sp.lane_sum(T.if_then_else(part == 0, weight, T.float32(0.0)), 32)
                            SM[0] = SM[0] * T.exp(MX[0] - grown) + step_sum
                            MX[0] = grown
                        if has_lse != 0:
                            # The forward's log-sum-exp: P_ij = exp(s - LSE) / 1.
                            MX[0] = LSE[h, i]
                            SM[0] = T.float32(1.0)
                        for j in T.serial(steps):
                            position: T.int32 = j * (32 // column_lanes) + lane // column_lanes
                            col: T.int32 = J_indices[start + T.min(position, length - 1)]
                            DOT[0] = T.float32(0.0)
                            if head_dim % column_lanes == 0:
                                for t in T.vectorized((head_dim + column_lanes - 1) // column_lanes):
                                    KL[t] = K[h, col, first + t]
                            else:
                                for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                    KL[t] = T.float32(0.0)
                                    if first + t < head_dim:
                                        KL[t] = K[h, col, first + t]
                            for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                DOT[0] = DOT[0] + QL[t] * KL[t]
                            dot: T.float32 = T.sp.lane_sum(DOT[0], column_lanes)
                            DOT[0] = T.float32(0.0)
                            if value_dim % column_lanes == 0:
                                for t in T.vectorized((value_dim + column_lanes - 1) // column_lanes):
                                    VL[t] = V[h, col, first_v + t]
                                for t in T.unroll((value_dim + column_lanes - 1) // column_lanes):
                                    DOT[0] = DOT[0] + GL[t] * VL[t]
                            else:
                                for t in T.unroll((value_dim + column_lanes - 1) // column_lanes):
                                    if first_v + t < value_dim:
                                        DOT[0] = DOT[0] + GL[t] * V[h, col, first_v + t]
                            grad_prob: T.float32 = T.sp.lane_sum(DOT[0], column_lanes)
                            prob: T.float32 = T.exp(dot - MX[0]) / SM[0]
                            grad_score: T.float32 = prob * (grad_prob - rowdot)
                            if position < length:
                                if part == 0:
                                    P[J_positions[start + position], h] = prob
                                    DS[J_positions[start + position], h] = grad_score
                                for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                    DQL[t] = DQL[t] + grad_score * KL[t]
                        # The groups' parts of dq_i: lane l adds lane l + OFFSET's (mod 32), for
                        # OFFSET = column_lanes, 2 column_lanes, ... below 32.
                        OFFSET[0] = column_lanes
                        for s in T.unroll(5):
                            if OFFSET[0] < 32:
                                for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                    other: T.float32 = T.sp.lane_shuffle(DQL[t], (lane + OFFSET[0]) % 32, 32)
                                    DQL[t] = DQL[t] + other
                                OFFSET[0] = OFFSET[0] * 2
                        if lane < column_lanes:
                            # (lane is part here: the index shows that the lanes write apart.)
                            for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                if lane * ((head_dim + column_lanes - 1) // column_lanes) + t < head_dim:
                                    DQ[h, i, lane * ((head_dim + column_lanes - 1) // column_lanes) + t] = DQL[t]
