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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"column_lanes": 4, "head_dim": 64, "value_dim": 64}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 64), "float32")
    K = T.match_buffer(k, (heads, n, 64), "float32")
    V = T.match_buffer(v, (heads, n, 64), "float32")
    O = T.match_buffer(out, (heads, m, 64), "float32")
    DO = T.match_buffer(grad_out, (heads, m, 64), "float32")
    LSE = T.match_buffer(lse, (heads, m), "float32")
    DQ = T.match_buffer(grad_q, (heads, m, 64), "float32")
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
                    v1: T.int32 = J_indptr[i]
                    v2: T.int32 = J_indptr[i + 1]
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        QL = T.alloc_buffer((16,), "float32", scope="local")
                        KL = T.alloc_buffer((16,), "float32", scope="local")
                        DQL = T.alloc_buffer((16,), "float32", scope="local")
                        GL = T.alloc_buffer((16,), "float32", scope="local")
                        VL = T.alloc_buffer((16,), "float32", scope="local")
                        MX = T.alloc_buffer((1,), "float32", scope="local")
                        SM = T.alloc_buffer((1,), "float32", scope="local")
                        DOT = T.alloc_buffer((1,), "float32", scope="local")
                        OFFSET = T.alloc_buffer((1,), "int32", scope="local")
                        part: T.int32 = lane % 4
                        first: T.int32 = part * 16
                        first_v: T.int32 = part * 16
                        for t in T.unroll(16):
                            QL[t] = T.float32(0.0)
                            DQL[t] = T.float32(0.0)
                            if first + t < 64:
                                QL[t] = Q[h, i, first + t]
                        DOT[0] = T.float32(0.0)
                        for t in T.unroll(16):
                            GL[t] = T.float32(0.0)
                            if first_v + t < 64:
                                GL[t] = DO[h, i, first_v + t]
                                DOT[0] = DOT[0] + GL[t] * O[h, i, first_v + t]
                        rowdot: T.float32 = T.sp.lane_sum(T.Select(lane < 4, DOT[0], T.float32(0.0)), 32)
                        MX[0] = T.float32(-T.inf)
                        SM[0] = T.float32(0.0)
                        length: T.int32 = v2 - v1
                        steps: T.int32 = (length + 8 - 1) // 8
                        for j in T.serial(T.Select(has_lse != 0, 0, steps)):
                            position: T.int32 = j * 8 + lane // 4
                            col: T.int32 = J_indices[v1 + T.min(position, length - 1)]
                            DOT[0] = T.float32(0.0)
                            for t in T.unroll(16):
                                if first + t < 64:
                                    DOT[0] = DOT[0] + QL[t] * K[h, col, first + t]
                            dot: T.float32 = T.sp.lane_sum(DOT[0], 4)
                            score: T.float32 = T.Select(position < length, dot, T.float32(-T.inf))
                            step_max: T.float32 = T.sp.lane_max(score, 32)
                            grown: T.float32 = T.max(MX[0], step_max)
                            weight: T.float32 = T.exp(score - grown)
                            step_sum: T.float32 = T.sp.lane_sum(T.Select(part == 0, weight, T.float32(0.0)), 32)
                            SM[0] = SM[0] * T.exp(MX[0] - grown) + step_sum
                            MX[0] = grown
                        if has_lse != 0:
                            MX[0] = LSE[h, i]
                            SM[0] = T.float32(1.0)
                        for j in T.serial(steps):
                            position: T.int32 = j * 8 + lane // 4
                            col: T.int32 = J_indices[v1 + T.min(position, length - 1)]
                            DOT[0] = T.float32(0.0)
                            if 0 == 0:
                                for t in T.vectorized(16):
                                    KL[t] = K[h, col, first + t]
                            else:
                                for t in T.unroll(16):
                                    KL[t] = T.float32(0.0)
                                    if first + t < 64:
                                        KL[t] = K[h, col, first + t]
                            for t in T.unroll(16):
                                DOT[0] = DOT[0] + QL[t] * KL[t]
                            dot: T.float32 = T.sp.lane_sum(DOT[0], 4)
                            DOT[0] = T.float32(0.0)
                            if 0 == 0:
                                for t in T.vectorized(16):
                                    VL[t] = V[h, col, first_v + t]
                                for t in T.unroll(16):
                                    DOT[0] = DOT[0] + GL[t] * VL[t]
                            else:
                                for t in T.unroll(16):
                                    if first_v + t < 64:
                                        DOT[0] = DOT[0] + GL[t] * V[h, col, first_v + t]
                            grad_prob: T.float32 = T.sp.lane_sum(DOT[0], 4)
                            prob: T.float32 = T.exp(dot - MX[0]) / SM[0]
                            grad_score: T.float32 = prob * (grad_prob - rowdot)
                            if position < length:
                                if part == 0:
                                    P[J_positions[v1 + position], h] = prob
                                    DS[J_positions[v1 + position], h] = grad_score
                                for t in T.unroll(16):
                                    DQL[t] = DQL[t] + grad_score * KL[t]
                        OFFSET[0] = 4
                        for s in T.unroll(5):
                            if OFFSET[0] < 32:
                                v0: T.int32 = (lane + OFFSET[0]) % 32
                                for t in T.unroll(16):
                                    other: T.float32 = T.sp.lane_shuffle(DQL[t], v0, 32)
                                    DQL[t] = DQL[t] + other
                                OFFSET[0] = OFFSET[0] * 2
                        if lane < 4:
                            for t in T.unroll(16):
                                if lane * 16 + t < 64:
                                    DQ[h, i, lane * 16 + t] = DQL[t]
