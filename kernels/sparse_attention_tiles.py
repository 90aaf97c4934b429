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
    # Sparse attention of every head on cuda, as
    # sparse_attention_online_columns.py, with the k and v rows read from
    # shared memory: a block of `tile_rows` warps, a warp per row of one head,
    # walks the columns in tiles of `tile_columns`. For each tile the block's
    # threads copy the tile's k and v rows into shared memory (KS, VS: rows
    # that all the block's rows share, read from memory once per block instead
    # of once per allowed column), wait at a barrier, then each warp takes its
    # row's allowed columns that fall in the tile: the row's columns are
    # sorted, so they are consecutive, and the first past the tile is found by
    # binary search from where the previous tile stopped (POS). The block
    # walks only the tiles from the first any of its rows reaches to the last
    # (SPAN: each row's first and last tile, exchanged at a barrier). Within a tile
    # a warp scores 32 / column_lanes columns a step as the columns kernel
    # does, each group of column_lanes lanes one column, a lane holding the
    # 16-byte pieces part, part + column_lanes, ... of q_i and of the k row
    # (`piece` elements each: a group reads 16 x column_lanes consecutive
    # bytes of shared memory at a time); k rows are `k_stride` elements apart
    # in KS (head_dim and a pad that spreads rows over the banks). A second
    # barrier ends the tile before the next copy overwrites it. The online
    # softmax, the output and LSE as in the columns kernel. A row past m (the
    # last block's) runs row m - 1 without storing it: every thread of the
    # block reaches every barrier. The caller asks for it only where head_dim
    # is a multiple of column_lanes x piece, value_dim of 32, and the rows are
    # sorted.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    Q = T.match_buffer(q, (heads, m, head_dim), T.float32)
    K = T.match_buffer(k, (heads, n, head_dim), "float32")
    V = T.match_buffer(v, (heads, n, value_dim), "float32")
    O = T.match_buffer(out, (heads, m, value_dim), "float32")
    LSE = T.match_buffer(lse, (heads, m), T.float32)
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + tile_rows - 1) // tile_rows, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(tile_rows, thread="threadIdx.y"):
                for lane in T.thread_binding(32, thread="threadIdx.x"):
                    KS = T.alloc_buffer((tile_columns * k_stride,), "float32", scope="shared")
                    VS = T.alloc_buffer((tile_columns * value_dim,), "float32", scope="shared")
                    QL = T.alloc_buffer((head_dim // column_lanes,), T.float32, scope="local")
                    KL = T.alloc_buffer((head_dim // column_lanes,), "float32", scope="local")
                    ACC = T.alloc_buffer((value_dim // 32,), T.float32, scope="local")
                    VL = T.alloc_buffer((value_dim // 32,), "float32", scope="local")
                    MX = T.alloc_buffer((1,), T.float32, scope="local")
                    SM = T.alloc_buffer((1,), T.float32, scope="local")
                    DOT = T.alloc_buffer((1,), T.float32, scope="local")
                    POS = T.alloc_buffer((1,), "int32", scope="local")
                    SPAN = T.alloc_buffer((2 * tile_rows,), T.int32, scope="shared")
                    TILES = T.alloc_buffer((2,), T.int32, scope="local")
                    i: T.int32 = T.min(row_block * tile_rows + warp, m - 1)
                    part: T.int32 = lane % column_lanes
                    thread: T.int32 = warp * 32 + lane
                    for t in T.unroll(head_dim // (column_lanes * piece)):
                        for e in T.vectorized(piece):
                            QL[t * piece + e] = Q[h, i, (t * column_lanes + part) * piece + e]
                    for t in T.unroll(value_dim // 32):
                        ACC[t] = T.float32(0.0)
                    MX[0] = -T.inf
                    SM[0] = T.float32(0.0)
                    end: T.int32 = J_indptr[i + 1]
                    POS[0] = J_indptr[i]
                    # The block walks the tiles from the first any of its rows reaches to the last (a banded
                    # pattern's block reads a few tiles, not all): each row's first and last tile, met in SPAN.
                    if lane == 0:
                        first: T.int32 = T.Cast(T.int32, J_indices[T.min(POS[0], nnz - 1)]) // tile_columns
                        last: T.int32 = T.Cast(T.int32, J_indices[T.max(end - 1, 0)]) // tile_columns
                        SPAN[warp] = T.if_then_else(POS[0] < end, first, (n + tile_columns - 1) // tile_columns)
                        SPAN[tile_rows + warp] = T.if_then_else(POS[0] < end, last, -1)
                    T.sp.sync_threads()
                    TILES[0] = SPAN[0]
                    TILES[1] = SPAN[tile_rows]
                    for w in T.unroll(tile_rows - 1):
                        TILES[0] = T.min(TILES[0], SPAN[w + 1])
                        TILES[1] = T.max(TILES[1], SPAN[tile_rows + w + 1])
                    for step in T.serial(T.max(TILES[1] - TILES[0] + 1, 0)):
                        tile: T.int32 = TILES[0] + step
                        first_column: T.int32 = tile * tile_columns
                        # The block copies the tile's k and v rows, a 16-byte piece a thread at a time.
                        for r in T.unroll((tile_columns * head_dim // piece + tile_rows * 32 - 1) // (tile_rows * 32)):
                            kp: T.int32 = r * tile_rows * 32 + thread
                            kc: T.int32 = kp // (head_dim // piece)
                            kd: T.int32 = kp % (head_dim // piece) * piece
                            if kc < tile_columns and first_column + kc < n:
                                for e in T.vectorized(piece):
                                    KS[kc * k_stride + kd + e] = K[h, first_column + kc, kd + e]
                        for r in T.unroll((tile_columns * value_dim // piece + tile_rows * 32 - 1) // (tile_rows * 32)):
                            vp: T.int32 = r * tile_rows * 32 + thread
                            vc: T.int32 = vp // (value_dim // piece)
                            vd: T.int32 = vp % (value_dim // piece) * piece
                            if vc < tile_columns and first_column + vc < n:
                                for e in T.vectorized(piece):
                                    VS[vc * value_dim + vd + e] = V[h, first_column + vc, vd + e]
                        T.sp.sync_threads()
                        start: T.int32 = POS[0]
                        stop: T.int32 = T.sp.lower_bound(indices, start, T.min(end, start + tile_columns),
                                                         first_column + tile_columns)
                        length: T.int32 = stop - start
                        for j in T.serial((length + 32 // column_lanes - 1) // (32 // column_lanes)):
                            position: T.int32 = j * (32 // column_lanes) + lane // column_lanes
                            col: T.int32 = J_indices[start + T.min(position, length - 1)] - first_column
                            # The lane's pieces of the k row, then its part of the score.
                            for t in T.unroll(head_dim // (column_lanes * piece)):
                                for e in T.vectorized(piece):
                                    KL[t * piece + e] = KS[col * k_stride + (t * column_lanes + part) * piece + e]
                            DOT[0] = T.float32(0.0)
                            for t in T.unroll(head_dim // column_lanes):
                                DOT[0] = DOT[0] + QL[t] * T.Cast(T.float32, KL[t])
                            dot: T.float32 = T.sp.lane_sum(DOT[0], column_lanes)
                            score: T.float32 = T.if_then_else(position < length, dot, -T.inf)
                            step_max: T.float32 = T.sp.lane_max(score, 32)
                            grown: T.float32 = T.max(MX[0], step_max)
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            weight: T.float32 = T.exp(score - grown)
                            MX[0] = grown
                            SM[0] = SM[0] * rescale + T.if_then_else(part == 0, weight, T.float32(0.0))
                            for t in T.unroll(value_dim // 32):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(32 // column_lanes):
                                weight_u: T.float32 = T.sp.lane_shuffle(weight, u * column_lanes, 32)
                                col_u: T.int32 = T.sp.lane_shuffle(col, u * column_lanes, 32)
                                if j * (32 // column_lanes) + u < length:
                                    for t in T.vectorized(value_dim // 32):
                                        VL[t] = VS[col_u * value_dim + lane * (value_dim // 32) + t]
                                    for t in T.unroll(value_dim // 32):
                                        ACC[t] = ACC[t] + weight_u * T.Cast(T.float32, VL[t])
                        POS[0] = stop
                        T.sp.sync_threads()
                    total: T.float32 = T.sp.lane_sum(SM[0], 32)
                    norm: T.float32 = T.if_then_else(total > T.float32(0.0), T.float32(1.0) / total, T.float32(0.0))
                    if row_block * tile_rows + warp < m:
                        for t in T.vectorized(value_dim // 32):
                            O[h, i, lane * (value_dim // 32) + t] = T.Cast("float32", ACC[t] * norm)
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(total)
