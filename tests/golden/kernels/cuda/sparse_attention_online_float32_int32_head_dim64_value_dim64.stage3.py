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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"head_dim": 64, "value_dim": 64}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 64), "float32")
    K = T.match_buffer(k, (heads, n, 64), "float32")
    V = T.match_buffer(v, (heads, n, 64), "float32")
    O = T.match_buffer(out, (heads, m, 64), "float32")
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
                        QL = T.alloc_buffer((2,), "float32", scope="local")
                        ACC = T.alloc_buffer((2,), "float32", scope="local")
                        MX = T.alloc_buffer((1,), "float32", scope="local")
                        SM = T.alloc_buffer((1,), "float32", scope="local")
                        COL = T.alloc_buffer((4,), "int32", scope="local")
                        DOT = T.alloc_buffer((4,), "float32", scope="local")
                        SCORE = T.alloc_buffer((4,), "float32", scope="local")
                        for t in T.unroll(2):
                            QL[t] = T.float32(0.0)
                            if t * 32 + lane < 64:
                                QL[t] = Q[h, i, t * 32 + lane]
                        for t in T.unroll(2):
                            ACC[t] = T.float32(0.0)
                        MX[0] = T.float32(-T.inf)
                        SM[0] = T.float32(0.0)
                        length: T.int32 = v1 - v0
                        for j in T.serial((length + 3) // 4):
                            for u in T.unroll(4):
                                COL[u] = J_indices[v0 + T.min(j * 4 + u, length - 1)]
                                DOT[u] = T.float32(0.0)
                                for t in T.unroll(2):
                                    if t * 32 + lane < 64:
                                        DOT[u] = DOT[u] + QL[t] * K[h, COL[u], t * 32 + lane]
                            for u in T.unroll(4):
                                SCORE[u] = T.Select(j * 4 + u < length, T.sp.lane_sum(DOT[u], 32), T.float32(-T.inf))
                            grown: T.float32 = T.max(T.max(MX[0], T.max(SCORE[0], SCORE[1])), T.max(SCORE[2], SCORE[3]))
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale
                            for t in T.unroll(2):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(4):
                                weight: T.float32 = T.exp(SCORE[u] - grown)
                                SM[0] = SM[0] + weight
                                for t in T.unroll(2):
                                    if t * 32 + lane < 64:
                                        ACC[t] = ACC[t] + weight * V[h, COL[u], t * 32 + lane]
                        norm: T.float32 = T.Select(SM[0] > T.float32(0.0), T.float32(1.0) / SM[0], T.float32(0.0))
                        for t in T.unroll(2):
                            if t * 32 + lane < 64:
                                O[h, i, t * 32 + lane] = ACC[t] * norm
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(SM[0])
