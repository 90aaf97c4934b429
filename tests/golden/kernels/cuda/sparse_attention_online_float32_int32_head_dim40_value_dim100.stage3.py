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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"head_dim": 40, "value_dim": 100}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 40), "float32")
    K = T.match_buffer(k, (heads, n, 40), "float32")
    V = T.match_buffer(v, (heads, n, 100), "float32")
    O = T.match_buffer(out, (heads, m, 100), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(4, thread="threadIdx.y"):
                i: T.int32 = row_block * 4 + warp
                if i < m:
                    v0: T.int32 = J_indptr[i + 1] - J_indptr[i]
                    v1: T.int32 = J_indptr[i]
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        MX = T.alloc_buffer((1,), "float32", scope="local")
                        SM = T.alloc_buffer((1,), "float32", scope="local")
                        DOT = T.alloc_buffer((1,), "float32", scope="local")
                        ACC = T.alloc_buffer((4,), "float32", scope="local")
                        MX[0] = T.float32(-T.inf)
                        SM[0] = T.float32(0.0)
                        for t in T.unroll(4):
                            ACC[t] = T.float32(0.0)
                        for j in T.serial(v0):
                            col: T.int32 = J_indices[v1 + j]
                            DOT[0] = T.float32(0.0)
                            for t in T.unroll(2):
                                if t * 32 + lane < 40:
                                    DOT[0] = DOT[0] + Q[h, i, t * 32 + lane] * K[h, col, t * 32 + lane]
                            score: T.float32 = T.sp.lane_sum(DOT[0], 32)
                            grown: T.float32 = T.max(MX[0], score)
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            weight: T.float32 = T.exp(score - grown)
                            SM[0] = SM[0] * rescale + weight
                            for t in T.unroll(4):
                                if t * 32 + lane < 100:
                                    ACC[t] = ACC[t] * rescale + weight * V[h, col, t * 32 + lane]
                            MX[0] = grown
                        for t in T.unroll(4):
                            if t * 32 + lane < 100:
                                O[h, i, t * 32 + lane] = T.Select(SM[0] > T.float32(0.0), ACC[t] / SM[0], T.float32(0.0))
