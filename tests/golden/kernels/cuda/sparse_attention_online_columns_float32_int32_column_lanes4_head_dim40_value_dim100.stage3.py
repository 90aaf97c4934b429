@T.prim_func
def sparse_attention_online_columns(
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
    column_lanes: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"column_lanes": 4, "head_dim": 40, "value_dim": 100}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 40), "float32")
    K = T.match_buffer(k, (heads, n, 40), "float32")
    V = T.match_buffer(v, (heads, n, 100), "float32")
    O = T.match_buffer(out, (heads, m, 100), "float32")
    LSE = T.match_buffer(lse, (heads, m), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(4, thread="threadIdx.y"):
                i: T.int32 = row_block * 4 + warp
                if i < m:
                    v0: T.int32 = J_indptr[i]
                    v1: T.int32 = J_indptr[i + 1]
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        QL = T.alloc_buffer((10,), "float32", scope="local")
                        ACC = T.alloc_buffer((4,), "float32", scope="local")
                        MX = T.alloc_buffer((1,), "float32", scope="local")
                        SM = T.alloc_buffer((1,), "float32", scope="local")
                        DOT = T.alloc_buffer((1,), "float32", scope="local")
                        VL = T.alloc_buffer((4,), "float32", scope="local")
                        KL = T.alloc_buffer((10,), "float32", scope="local")
                        part: T.int32 = lane % 4
                        first: T.int32 = part * 10
                        for t in T.unroll(10):
                            QL[t] = T.float32(0.0)
                            if first + t < 40:
                                QL[t] = Q[h, i, first + t]
                        for t in T.unroll(4):
                            ACC[t] = T.float32(0.0)
                        MX[0] = T.float32(-T.inf)
                        SM[0] = T.float32(0.0)
                        length: T.int32 = v1 - v0
                        for j in T.serial((length + 8 - 1) // 8):
                            position: T.int32 = j * 8 + lane // 4
                            col: T.int32 = J_indices[v0 + T.min(position, length - 1)]
                            DOT[0] = T.float32(0.0)
                            if 0 == 0:
                                for t in T.vectorized(10):
                                    KL[t] = K[h, col, first + t]
                                for t in T.unroll(10):
                                    DOT[0] = DOT[0] + QL[t] * KL[t]
                            else:
                                for t in T.unroll(10):
                                    if first + t < 40:
                                        DOT[0] = DOT[0] + QL[t] * K[h, col, first + t]
                            dot: T.float32 = T.sp.lane_sum(DOT[0], 4)
                            score: T.float32 = T.Select(position < length, dot, T.float32(-T.inf))
                            step_max: T.float32 = T.sp.lane_max(score, 32)
                            grown: T.float32 = T.max(MX[0], step_max)
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            weight: T.float32 = T.exp(score - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale + T.Select(part == 0, weight, T.float32(0.0))
                            for t in T.unroll(4):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(8):
                                weight_u: T.float32 = T.sp.lane_shuffle(weight, u * 4, 32)
                                col_u: T.int32 = T.sp.lane_shuffle(col, u * 4, 32)
                                if j * 8 + u < length:
                                    if 4 == 0:
                                        for t in T.vectorized(4):
                                            VL[t] = V[h, col_u, lane * 4 + t]
                                        for t in T.unroll(4):
                                            ACC[t] = ACC[t] + weight_u * VL[t]
                                    else:
                                        for t in T.unroll(4):
                                            if t * 32 + lane < 100:
                                                vt: T.float32 = V[h, col_u, t * 32 + lane]
                                                ACC[t] = ACC[t] + weight_u * vt
                        total: T.float32 = T.sp.lane_sum(SM[0], 32)
                        norm: T.float32 = T.Select(total > T.float32(0.0), T.float32(1.0) / total, T.float32(0.0))
                        if 4 == 0:
                            for t in T.vectorized(4):
                                O[h, i, lane * 4 + t] = ACC[t] * norm
                        else:
                            for t in T.unroll(4):
                                if t * 32 + lane < 100:
                                    O[h, i, t * 32 + lane] = ACC[t] * norm
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(total)
