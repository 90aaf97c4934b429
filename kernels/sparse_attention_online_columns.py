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
    # Sparse attention of every head on cuda in one pass over each row's
    # allowed columns (q is already scaled), as sparse_attention_online.py,
    # with the scores spread over the lanes: a warp per (row, head), four rows
    # per block, and each group of `column_lanes` lanes scores its own column,
    # 32 / column_lanes columns per step. A lane keeps its run of
    # head_dim / column_lanes features of q_i in registers (QL) and reads the
    # same run of its column's k row (vector loads where the lanes' runs are
    # equal), so a step has every group's k row in flight at once, not four;
    # a group sums its parts with T.sp.lane_sum(..., column_lanes). The
    # step's largest score (lane_max) rescales the running sums as in the
    # online softmax (the weights' sum kept per lane, each group's first lane
    # adding its columns', and summed over the warp once at the end: one
    # reduction a step fewer); then the lanes turn to the features: each
    # column's weight and number go to every lane (T.sp.lane_shuffle) and the warp
    # adds the weighted v rows, each lane its features (ACC: a run of
    # value_dim / 32 in vector loads where 32 divides value_dim, else every
    # 32nd), the step's v rows in flight together. A column past the row's
    # end scores -inf and adds nothing; a row without allowed columns gives
    # zeros. The row's log-sum-exp MX + log(sum) goes to LSE (-inf for a row
    # without columns): the backward reads it instead of recomputing the
    # softmax. The lane operations are bound to names before any condition
    # uses them: every lane of the warp must reach each of them.
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
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for h in T.thread_binding(heads, thread="blockIdx.y"):
            for warp in T.thread_binding(4, thread="threadIdx.y"):
                i: T.int32 = row_block * 4 + warp
                if i < m:
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        QL = T.alloc_buffer(((head_dim + column_lanes - 1) // column_lanes,), T.float32, scope="local")
                        ACC = T.alloc_buffer(((value_dim + 31) // 32,), T.float32, scope="local")
                        MX = T.alloc_buffer((1,), T.float32, scope="local")
                        SM = T.alloc_buffer((1,), T.float32, scope="local")
                        DOT = T.alloc_buffer((1,), T.float32, scope="local")
                        VL = T.alloc_buffer(((value_dim + 31) // 32,), "float32", scope="local")
                        KL = T.alloc_buffer(((head_dim + column_lanes - 1) // column_lanes,), "float32", scope="local")
                        part: T.int32 = lane % column_lanes
                        first: T.int32 = part * ((head_dim + column_lanes - 1) // column_lanes)
                        for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                            QL[t] = T.float32(0.0)
                            if first + t < head_dim:
                                QL[t] = Q[h, i, first + t]
                        for t in T.unroll((value_dim + 31) // 32):
                            ACC[t] = T.float32(0.0)
                        MX[0] = -T.inf
                        SM[0] = T.float32(0.0)
                        start: T.int32 = J_indptr[i]
                        length: T.int32 = J_indptr[i + 1] - start
                        for j in T.serial((length + 32 // column_lanes - 1) // (32 // column_lanes)):
                            position: T.int32 = j * (32 // column_lanes) + lane // column_lanes
                            col: T.int32 = J_indices[start + T.min(position, length - 1)]
                            DOT[0] = T.float32(0.0)
                            if head_dim % column_lanes == 0:
                                # The lane's run of the k row in vector loads, then its part of the score.
                                for t in T.vectorized((head_dim + column_lanes - 1) // column_lanes):
                                    KL[t] = K[h, col, first + t]
                                for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                    DOT[0] = DOT[0] + QL[t] * T.Cast(T.float32, KL[t])
                            else:
                                for t in T.unroll((head_dim + column_lanes - 1) // column_lanes):
                                    if first + t < head_dim:
                                        DOT[0] = DOT[0] + QL[t] * T.Cast(T.float32, K[h, col, first + t])
                            dot: T.float32 = T.sp.lane_sum(DOT[0], column_lanes)
                            score: T.float32 = T.if_then_else(position < length, dot, -T.inf)
                            step_max: T.float32 = T.sp.lane_max(score, 32)
                            grown: T.float32 = T.max(MX[0], step_max)
                            rescale: T.float32 = T.exp(MX[0] - grown)
                            weight: T.float32 = T.exp(score - grown)
                            MX[0] = grown
                            # Each group's first lane sums its own columns' weights; the lanes' sums meet once, after.
                            SM[0] = SM[0] * rescale + T.if_then_else(part == 0, weight, T.float32(0.0))
                            for t in T.unroll((value_dim + 31) // 32):
                                ACC[t] = ACC[t] * rescale
                            for u in T.unroll(32 // column_lanes):
                                weight_u: T.float32 = T.sp.lane_shuffle(weight, u * column_lanes, 32)
                                col_u: T.int32 = T.sp.lane_shuffle(col, u * column_lanes, 32)
                                if j * (32 // column_lanes) + u < length:
                                    if value_dim % 32 == 0:
                                        # Each lane its run of the v row, in vector loads.
                                        for t in T.vectorized((value_dim + 31) // 32):
                                            VL[t] = V[h, col_u, lane * ((value_dim + 31) // 32) + t]
                                        for t in T.unroll((value_dim + 31) // 32):
                                            ACC[t] = ACC[t] + weight_u * T.Cast(T.float32, VL[t])
                                    else:
                                        for t in T.unroll((value_dim + 31) // 32):
                                            if t * 32 + lane < value_dim:
                                                vt: T.float32 = T.Cast(T.float32, V[h, col_u, t * 32 + lane])
                                                ACC[t] = ACC[t] + weight_u * vt
                        total: T.float32 = T.sp.lane_sum(SM[0], 32)
                        norm: T.float32 = T.if_then_else(total > T.float32(0.0), T.float32(1.0) / total, T.float32(0.0))
                        if value_dim % 32 == 0:
                            for t in T.vectorized((value_dim + 31) // 32):
                                O[h, i, lane * ((value_dim + 31) // 32) + t] = T.Cast("float32", ACC[t] * norm)
                        else:
                            for t in T.unroll((value_dim + 31) // 32):
                                if t * 32 + lane < value_dim:
                                    O[h, i, t * 32 + lane] = T.Cast("float32", ACC[t] * norm)
                        if lane == 0:
                            LSE[h, i] = MX[0] + T.log(total)
