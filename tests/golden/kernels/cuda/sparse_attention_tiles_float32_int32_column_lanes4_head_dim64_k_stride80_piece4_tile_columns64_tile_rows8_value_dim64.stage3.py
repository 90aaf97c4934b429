@T.prim_func
def sparse_attention_tiles(
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
    piece: T.int32,
    tile_rows: T.int32,
    tile_columns: T.int32,
    k_stride: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"column_lanes": 4, "head_dim": 64, "k_stride": 80, "piece": 4, "tile_columns": 64, "tile_rows": 8, "value_dim": 64}, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, 64), "float32")
    K = T.match_buffer(k, (heads, n, 64), "float32")
    V = T.match_buffer(v, (heads, n, 64), "float32")
    O = T.match_buffer(out, (heads, m, 64), "float32")
    LSE = T.match_buffer(lse, (heads, m), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + 8 - 1) // 8, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(8, thread="threadIdx.y"):
                v5: T.int32 = T.min(row_block * 8 + warp, m - 1)
                v6: T.int32 = J_indptr[v5 + 1]
                v7: T.int32 = J_indptr[v5]
                for lane in T.thread_binding(32, thread="threadIdx.x"):
                    KS = T.alloc_buffer((5120,), "float32", scope="shared")
                    VS = T.alloc_buffer((4096,), "float32", scope="shared")
                    QL = T.alloc_buffer((16,), "float32", scope="local")
                    KL = T.alloc_buffer((16,), "float32", scope="local")
                    ACC = T.alloc_buffer((2,), "float32", scope="local")
                    VL = T.alloc_buffer((2,), "float32", scope="local")
                    MX = T.alloc_buffer((1,), "float32", scope="local")
                    SM = T.alloc_buffer((1,), "float32", scope="local")
                    DOT = T.alloc_buffer((1,), "float32", scope="local")
                    POS = T.alloc_buffer((1,), "int32", scope="local")
                    SPAN = T.alloc_buffer((16,), "int32", scope="shared")
                    TILES = T.alloc_buffer((2,), "int32", scope="local")
                    part: T.int32 = lane % 4
                    thread: T.int32 = warp * 32 + lane
                    for t in T.unroll(4):
                        v0: T.int32 = (t * 4 + part) * 4
                        for e in T.vectorized(4):
                            QL[t * 4 + e] = Q[h, v5, v0 + e]
                    for t in T.unroll(2):
                        ACC[t] = T.float32(0.0)
                    MX[0] = T.float32(-T.inf)
                    SM[0] = T.float32(0.0)
                    POS[0] = v7
                    if lane == 0:
                        first: T.int32 = J_indices[T.min(POS[0], nnz - 1)] // 64
                        last: T.int32 = J_indices[T.max(v6 - 1, 0)] // 64
                        SPAN[warp] = T.Select(POS[0] < v6, first, (n + 64 - 1) // 64)
                        SPAN[8 + warp] = T.Select(POS[0] < v6, last, -1)
                    T.sp.sync_threads()
                    TILES[0] = SPAN[0]
                    TILES[1] = SPAN[8]
                    for w in T.unroll(7):
                        TILES[0] = T.min(TILES[0], SPAN[w + 1])
                        TILES[1] = T.max(TILES[1], SPAN[8 + w + 1])
                    for step in T.serial(T.max(TILES[1] - TILES[0] + 1, 0)):
                        tile: T.int32 = TILES[0] + step
                        first_column: T.int32 = tile * 64
                        for r in T.unroll(4):
                            kp: T.int32 = r * 8 * 32 + thread
                            kc: T.int32 = kp // 16
                            kd: T.int32 = kp % 16 * 4
                            if kc < 64 and first_column + kc < n:
                                v1: T.int32 = kc * 80 + kd
                                for e in T.vectorized(4):
                                    KS[v1 + e] = K[h, first_column + kc, kd + e]
                        for r in T.unroll(4):
                            vp: T.int32 = r * 8 * 32 + thread
                            vc: T.int32 = vp // 16
                            vd: T.int32 = vp % 16 * 4
                            if vc < 64 and first_column + vc < n:
                                v2: T.int32 = vc * 64 + vd
                                for e in T.vectorized(4):
                                    VS[v2 + e] = V[h, first_column + vc, vd + e]
                        T.sp.sync_threads()
                        start: T.int32 = POS[0]
                        stop: T.int32 = T.sp.lower_bound(indices, start, T.min(v6, start + 64), first_column + 64)
                        length: T.int32 = stop - start
                        for j in T.serial((length + 8 - 1) // 8):
                            position: T.int32 = j * 8 + lane // 4
                            col: T.int32 = J_indices[start + T.min(position, length - 1)] - first_column
                            for t in T.unroll(4):
                                v3: T.int32 = col * 80 + (t * 4 + part) * 4
                                for e in T.vectorized(4):
                                    KL[t * 4 + e] = KS[v3 + e]
                            DOT[0] = T.float32(0.0)
                            for t in T.unroll(16):
                                DOT[0] = DOT[0] + QL[t] * KL[t]
                            dot: T.float32 = T.sp.lane_sum(DOT[0], 4)
                            score: T.float32 = T.Select(position < length, dot, T.float32(-T.inf))
                            step_max: T.float32 = T.sp.lane_max(score, 32)
                            grown: T.float32 = T.max(MX[0], step_max)
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            weight: T.float32 = T.exp(score - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale + T.Select(part == 0, weight, T.float32(0.0))
                            for t in T.unroll(2):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(8):
                                weight_u: T.float32 = T.sp.lane_shuffle(weight, u * 4, 32)
                                col_u: T.int32 = T.sp.lane_shuffle(col, u * 4, 32)
                                if j * 8 + u < length:
                                    v4: T.int32 = col_u * 64 + lane * 2
                                    for t in T.vectorized(2):
                                        VL[t] = VS[v4 + t]
                                    for t in T.unroll(2):
                                        ACC[t] = ACC[t] + weight_u * VL[t]
                        POS[0] = stop
                        T.sp.sync_threads()
                    total: T.float32 = T.sp.lane_sum(SM[0], 32)
                    norm: T.float32 = T.Select(total > T.float32(0.0), T.float32(1.0) / total, T.float32(0.0))
                    if row_block * 8 + warp < m:
                        for t in T.vectorized(2):
                            O[h, v5, lane * 2 + t] = ACC[t] * norm
                        if lane == 0:
                            LSE[h, v5] = MX[0] + T.log(total)
