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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"column_lanes": 16, "head_dim": 40, "value_dim": 100}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 40), "float64")
    K = T.match_buffer(k, (heads, n, 40), "float64")
    V = T.match_buffer(v, (heads, n, 100), "float64")
    O = T.match_buffer(out, (heads, m, 100), "float64")
    DO = T.match_buffer(grad_out, (heads, m, 100), "float64")
    LSE = T.match_buffer(lse, (heads, m), "float64")
    DQ = T.match_buffer(grad_q, (heads, m, 40), "float64")
    P = T.match_buffer(probs, (nnz, heads), "float64")
    DS = T.match_buffer(grad_scores, (nnz, heads), "float64")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    J_positions = T.match_buffer(positions, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    T.assume_buffer_domain(J_positions, [0, nnz - 1])
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(4, thread="threadIdx.y"):
                i: T.int32 = row_block * 4 + warp
                if i < m:
                    v1: T.int64 = J_indptr[i]
                    v2: T.int64 = J_indptr[i + 1]
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        QL = T.alloc_buffer((3,), "float64", scope="local")
                        KL = T.alloc_buffer((3,), "float64", scope="local")
                        DQL = T.alloc_buffer((3,), "float64", scope="local")
                        GL = T.alloc_buffer((7,), "float64", scope="local")
                        VL = T.alloc_buffer((7,), "float64", scope="local")
                        MX = T.alloc_buffer((1,), "float64", scope="local")
                        SM = T.alloc_buffer((1,), "float64", scope="local")
                        DOT = T.alloc_buffer((1,), "float64", scope="local")
                        OFFSET = T.alloc_buffer((1,), "int32", scope="local")
                        part: T.int32 = lane % 16
                        first: T.int32 = part * 3
                        first_v: T.int32 = part * 7
                        for t in T.unroll(3):
                            QL[t] = T.float64(0.0)
                            DQL[t] = T.float64(0.0)
                            if first + t < 40:
                                QL[t] = Q[h, i, first + t]
                        DOT[0] = T.float64(0.0)
                        for t in T.unroll(7):
                            GL[t] = T.float64(0.0)
                            if first_v + t < 100:
                                GL[t] = DO[h, i, first_v + t]
                                DOT[0] = DOT[0] + GL[t] * O[h, i, first_v + t]
                        rowdot: T.float64 = T.sp.lane_sum(T.Select(lane < 16, DOT[0], T.float64(0.0)), 32)
                        MX[0] = T.float64(-T.inf)
                        SM[0] = T.float64(0.0)
                        length: T.int64 = v2 - v1
                        steps: T.int64 = (length + T.int64(2) - T.int64(1)) // T.int64(2)
                        for j in T.serial(T.Select(has_lse != 0, T.int64(0), steps)):
                            position: T.int64 = j * T.int64(2) + T.Cast("int64", lane // 16)
                            col: T.int64 = J_indices[v1 + T.min(position, length - T.int64(1))]
                            DOT[0] = T.float64(0.0)
                            for t in T.unroll(3):
                                if first + t < 40:
                                    DOT[0] = DOT[0] + QL[t] * K[h, col, first + t]
                            dot: T.float64 = T.sp.lane_sum(DOT[0], 16)
                            score: T.float64 = T.Select(position < length, dot, T.float64(-T.inf))
                            step_max: T.float64 = T.sp.lane_max(score, 32)
                            grown: T.float64 = T.max(MX[0], step_max)
                            weight: T.float64 = T.exp(score - grown)
                            step_sum: T.float64 = T.sp.lane_sum(T.Select(part == 0, weight, T.float64(0.0)), 32)
                            SM[0] = SM[0] * T.exp(MX[0] - grown) + step_sum
                            MX[0] = grown
                        if has_lse != 0:
                            MX[0] = LSE[h, i]
                            SM[0] = T.float64(1.0)
                        for j in T.serial(steps):
                            position: T.int64 = j * T.int64(2) + T.Cast("int64", lane // 16)
                            col: T.int64 = J_indices[v1 + T.min(position, length - T.int64(1))]
                            DOT[0] = T.float64(0.0)
                            if 8 == 0:
                                for t in T.vectorized(3):
                                    KL[t] = K[h, col, first + t]
                            else:
                                for t in T.unroll(3):
                                    KL[t] = T.float64(0.0)
                                    if first + t < 40:
                                        KL[t] = K[h, col, first + t]
                            for t in T.unroll(3):
                                DOT[0] = DOT[0] + QL[t] * KL[t]
                            dot: T.float64 = T.sp.lane_sum(DOT[0], 16)
                            DOT[0] = T.float64(0.0)
                            if 4 == 0:
                                for t in T.vectorized(7):
                                    VL[t] = V[h, col, first_v + t]
                                for t in T.unroll(7):
                                    DOT[0] = DOT[0] + GL[t] * VL[t]
                            else:
                                for t in T.unroll(7):
                                    if first_v + t < 100:
                                        DOT[0] = DOT[0] + GL[t] * V[h, col, first_v + t]
                            grad_prob: T.float64 = T.sp.lane_sum(DOT[0], 16)
                            prob: T.float64 = T.exp(dot - MX[0]) / SM[0]
                            grad_score: T.float64 = prob * (grad_prob - rowdot)
                            if position < length:
                                if part == 0:
                                    P[J_positions[v1 + position], h] = prob
                                    DS[J_positions[v1 + position], h] = grad_score
                                for t in T.unroll(3):
                                    DQL[t] = DQL[t] + grad_score * KL[t]
                        OFFSET[0] = 16
                        for s in T.unroll(5):
                            if OFFSET[0] < 32:
                                v0: T.int32 = (lane + OFFSET[0]) % 32
                                for t in T.unroll(3):
                                    other: T.float64 = T.sp.lane_shuffle(DQL[t], v0, 32)
                                    DQL[t] = DQL[t] + other
                                OFFSET[0] = OFFSET[0] * 2
                        if lane < 16:
                            for t in T.unroll(3):
                                if lane * 3 + t < 40:
                                    DQ[h, i, lane * 3 + t] = DQL[t]
