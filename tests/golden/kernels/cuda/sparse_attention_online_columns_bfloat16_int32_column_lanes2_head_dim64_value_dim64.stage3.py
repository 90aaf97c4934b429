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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"column_lanes": 2, "head_dim": 64, "value_dim": 64}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 64), "float32")
    K = T.match_buffer(k, (heads, n, 64), "bfloat16")
    V = T.match_buffer(v, (heads, n, 64), "bfloat16")
    O = T.match_buffer(out, (heads, m, 64), "bfloat16")
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
                        QL = T.alloc_buffer((32,), "float32", scope="local")
                        ACC = T.alloc_buffer((2,), "float32", scope="local")
                        MX = T.alloc_buffer((1,), "float32", scope="local")
                        SM = T.alloc_buffer((1,), "float32", scope="local")
                        DOT = T.alloc_buffer((1,), "float32", scope="local")
                        VL = T.alloc_buffer((2,), "bfloat16", scope="local")
                        KL = T.alloc_buffer((32,), "bfloat16", scope="local")
                        part: T.int32 = lane % 2
                        first: T.int32 = part * 32
                        for t in T.unroll(32):
                            QL[t] = T.float32(0.0)
                            if first + t < 64:
                                QL[t] = Q[h, i, first + t]
                        for t in T.unroll(2):
                            ACC[t] = T.float32(0.0)
                        MX[0] = T.float32(-T.inf)
                        SM[0] = T.float32(0.0)
                        length: T.int32 = v1 - v0
                        for j in T.serial((length + 16 - 1) // 16):
                            position: T.int32 = j * 16 + lane // 2
                            col: T.int32 = J_indices[v0 + T.min(position, length - 1)]
                            DOT[0] = T.float32(0.0)
                            if 0 == 0:
                                for t in T.vectorized(32):
                                    KL[t] = K[h, col, first + t]
                                for t in T.unroll(32):
                                    DOT[0] = DOT[0] + QL[t] * T.Cast("float32", KL[t])
                            else:
                                for t in T.unroll(32):
                                    if first + t < 64:
                                        DOT[0] = DOT[0] + QL[t] * T.Cast("float32", K[h, col, first + t])
                            dot: T.float32 = T.sp.lane_sum(DOT[0], 2)
                            score: T.float32 = T.Select(position < length, dot, T.float32(-T.inf))
                            step_max: T.float32 = T.sp.lane_max(score, 32)
                            grown: T.float32 = T.max(MX[0], step_max)
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            weight: T.float32 = T.exp(score - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale + T.Select(part == 0, weight, T.float32(0.0))
                            for t in T.unroll(2):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(16):
                                weight_u: T.float32 = T.sp.lane_shuffle(weight, u * 2, 32)
                                col_u: T.int32 = T.sp.lane_shuffle(col, u * 2, 32)
                                if j * 16 + u < length:
                                    if 0 == 0:
                                        for t in T.vectorized(2):
                                            VL[t] = V[h, col_u, lane * 2 + t]
                                        for t in T.unroll(2):
                                            ACC[t] = ACC[t] + weight_u * T.Cast("float32", VL[t])
                                    else:
                                        for t in T.unroll(2):
                                            if t * 32 + lane < 64:
                                                vt: T.float32 = T.Cast("float32", V[h, col_u, t * 32 + lane])
                                                ACC[t] = ACC[t] + weight_u * vt
                        total: T.float32 = T.sp.lane_sum(SM[0], 32)
                        norm: T.float32 = T.Select(total > T.float32(0.0), T.float32(1.0) / total, T.float32(0.0))
                        if 0 == 0:
                            for t in T.vectorized(2):
                                O[h, i, lane * 2 + t] = T.Cast("bfloat16", ACC[t] * norm)
                        else:
                            for t in T.unroll(2):
                                if t * 32 + lane < 64:
                                    O[h, i, t * 32 + lane] = T.Cast("bfloat16", ACC[t] * norm)
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(total)
