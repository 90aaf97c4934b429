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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"column_lanes": 1, "head_dim": 1, "value_dim": 1}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 1), "float64")
    K = T.match_buffer(k, (heads, n, 1), "float64")
    V = T.match_buffer(v, (heads, n, 1), "float64")
    O = T.match_buffer(out, (heads, m, 1), "float64")
    LSE = T.match_buffer(lse, (heads, m), "float64")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(4, thread="threadIdx.y"):
                i: T.int32 = row_block * 4 + warp
                if i < m:
                    v0: T.int64 = J_indptr[i]
                    v1: T.int64 = J_indptr[i + 1]
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        QL = T.alloc_buffer((1,), "float64", scope="local")
                        ACC = T.alloc_buffer((1,), "float64", scope="local")
                        MX = T.alloc_buffer((1,), "float64", scope="local")
                        SM = T.alloc_buffer((1,), "float64", scope="local")
                        DOT = T.alloc_buffer((1,), "float64", scope="local")
                        VL = T.alloc_buffer((1,), "float64", scope="local")
                        KL = T.alloc_buffer((1,), "float64", scope="local")
                        part: T.int32 = 0
                        for t in T.unroll(1):
                            QL[t] = T.float64(0.0)
                            if part + t < 1:
                                QL[t] = Q[h, i, part + t]
                        for t in T.unroll(1):
                            ACC[t] = T.float64(0.0)
                        MX[0] = T.float64(-T.inf)
                        SM[0] = T.float64(0.0)
                        length: T.int64 = v1 - v0
                        for j in T.serial((length + T.int64(32) - T.int64(1)) // T.int64(32)):
                            position: T.int64 = j * T.int64(32) + T.Cast("int64", lane)
                            col: T.int64 = J_indices[v0 + T.min(position, length - T.int64(1))]
                            DOT[0] = T.float64(0.0)
                            if 0 == 0:
                                for t in T.vectorized(1):
                                    KL[t] = K[h, col, part + t]
                                for t in T.unroll(1):
                                    DOT[0] = DOT[0] + QL[t] * KL[t]
                            else:
                                for t in T.unroll(1):
                                    if part + t < 1:
                                        DOT[0] = DOT[0] + QL[t] * K[h, col, part + t]
                            dot: T.float64 = T.sp.lane_sum(DOT[0], 1)
                            score: T.float64 = T.Select(position < length, dot, T.float64(-T.inf))
                            step_max: T.float64 = T.sp.lane_max(score, 32)
                            grown: T.float64 = T.max(MX[0], step_max)
                            rescale: T.float64 = T.exp(MX[0] - grown)
                            weight: T.float64 = T.exp(score - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale + T.Select(part == 0, weight, T.float64(0.0))
                            for t in T.unroll(1):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(32):
                                weight_u: T.float64 = T.sp.lane_shuffle(weight, u, 32)
                                col_u: T.int64 = T.sp.lane_shuffle(col, u, 32)
                                if j * T.int64(32) + T.Cast("int64", u) < length:
                                    if 1 == 0:
                                        for t in T.vectorized(1):
                                            VL[t] = V[h, col_u, lane + t]
                                        for t in T.unroll(1):
                                            ACC[t] = ACC[t] + weight_u * VL[t]
                                    else:
                                        for t in T.unroll(1):
                                            if t * 32 + lane < 1:
                                                vt: T.float64 = V[h, col_u, t * 32 + lane]
                                                ACC[t] = ACC[t] + weight_u * vt
                        total: T.float64 = T.sp.lane_sum(SM[0], 32)
                        norm: T.float64 = T.Select(total > T.float64(0.0), T.float64(1.0) / total, T.float64(0.0))
                        if 1 == 0:
                            for t in T.vectorized(1):
                                O[h, i, lane + t] = ACC[t] * norm
                        else:
                            for t in T.unroll(1):
                                if t * 32 + lane < 1:
                                    O[h, i, t * 32 + lane] = ACC[t] * norm
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(total)
