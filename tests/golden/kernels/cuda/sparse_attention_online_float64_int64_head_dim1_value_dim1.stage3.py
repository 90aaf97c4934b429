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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"head_dim": 1, "value_dim": 1}, "sparse_tir_level": 0})
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
                        COL = T.alloc_buffer((4,), "int64", scope="local")
                        DOT = T.alloc_buffer((4,), "float64", scope="local")
                        SCORE = T.alloc_buffer((4,), "float64", scope="local")
                        for t in T.unroll(1):
                            QL[t] = T.float64(0.0)
                            if t * 32 + lane < 1:
                                QL[t] = Q[h, i, t * 32 + lane]
                        for t in T.unroll(1):
                            ACC[t] = T.float64(0.0)
                        MX[0] = T.float64(-T.inf)
                        SM[0] = T.float64(0.0)
                        length: T.int64 = v1 - v0
                        for j in T.serial((length + T.int64(3)) // T.int64(4)):
                            for u in T.unroll(4):
                                COL[u] = J_indices[v0 + T.min(j * T.int64(4) + T.Cast("int64", u), length - T.int64(1))]
                                DOT[u] = T.float64(0.0)
                                for t in T.unroll(1):
                                    if t * 32 + lane < 1:
                                        DOT[u] = DOT[u] + QL[t] * K[h, COL[u], t * 32 + lane]
                            for u in T.unroll(4):
                                SCORE[u] = T.Select(j * T.int64(4) + T.Cast("int64", u) < length, T.sp.lane_sum(DOT[u], 32), T.float64(-T.inf))
                            grown: T.float64 = T.max(T.max(MX[0], T.max(SCORE[0], SCORE[1])), T.max(SCORE[2], SCORE[3]))
                            rescale: T.float64 = T.exp(MX[0] - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale
                            for t in T.unroll(1):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(4):
                                weight: T.float64 = T.exp(SCORE[u] - grown)
                                SM[0] = SM[0] + weight
                                for t in T.unroll(1):
                                    if t * 32 + lane < 1:
                                        ACC[t] = ACC[t] + weight * V[h, COL[u], t * 32 + lane]
                        norm: T.float64 = T.Select(SM[0] > T.float64(0.0), T.float64(1.0) / SM[0], T.float64(0.0))
                        for t in T.unroll(1):
                            if t * 32 + lane < 1:
                                O[h, i, t * 32 + lane] = ACC[t] * norm
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(SM[0])
