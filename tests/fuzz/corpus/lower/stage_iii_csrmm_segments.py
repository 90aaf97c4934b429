# SpMM (sum, or mean with `divide`) over the row segments of a CSR matrix on
# cuda: each row's non-zeros cut into runs of at most a fixed length, so
# that a long row is many units of parallel work instead of one. Segment s
# covers the CSR positions seg_ptr[s] .. seg_ptr[s + 1] of row seg_row[s];
# the values and column indices are the CSR matrix's own arrays, only the
# row pointers are finer. A segment that is its row's only one (seg_slot[s]
# < 0: most rows of a graph) writes the row to C as it is, rounded once and
# divided by the row's length first where `divide` is 1; the segments of a
# row cut in several add their partial sums into row seg_slot[s] of the
# workspace W atomically (W in the accumulator's type, T.float32: float32
# for float32 and 16-bit values, float64 for float64, zeroed by the caller,
# who divides and rounds those rows once). So only the long rows pay for
# atomics and a zeroed workspace, where every row used to go through both.
# A stage-III script: `group` segments a block (threadIdx.y), each over
# `lanes` lanes (threadIdx.x) that own `per_thread` consecutive features
# each, moved with one vector load per non-zero, feature tiles of
# lanes x per_thread over blockIdx.y; a segment's non-zeros in unrolled
# groups of 4, their gathers in flight together.
@T.prim_func
def csrmm_segments(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    w: T.handle,
    lengths: T.handle,
    seg_row: T.handle,
    seg_ptr: T.handle,
    seg_slot: T.handle,
    indices: T.handle,
    segs: T.int32,
    m: T.int32,
    n: T.int32,
    slots: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
    divide: T.int32,
    lanes: T.int32,
    per_thread: T.int32,
    group: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, feat_size), "float32")
    C = T.match_buffer(c, (m, feat_size), "float32")
    W = T.match_buffer(w, (slots, feat_size), T.float32)
    D = T.match_buffer(lengths, (m,), T.float32)
    S_row = T.match_buffer(seg_row, (segs,), "int32")
    S_ptr = T.match_buffer(seg_ptr, (segs + 1,), "int32")
    S_slot = T.match_buffer(seg_slot, (segs,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(S_row, [0, m - 1])
    T.assume_buffer_domain(S_ptr, [0, nnz])
    T.assume_buffer_domain(S_slot, [-1, slots - 1])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for s_0 in T.thread_binding((segs + group - 1) // group, thread="blockIdx.x"):
        for tile in T.thread_binding((feat_size + lanes * per_thread - 1) // (lanes * per_thread), thread="blockIdx.y"):
            for s_1 in T.thread_binding(group, thread="threadIdx.y"):
                s: T.int32 = s_0 * group + s_1
                if s < segs:
                    for lane in T.thread_binding(lanes, thread="threadIdx.x"):
                        first: T.int32 = (tile * lanes + lane) * per_thread
                        if first < feat_size:
                            ACC = T.alloc_buffer((per_thread,), T.float32, scope="local")
                            BL = T.alloc_buffer((per_thread,), "float32", scope="local")
                            CL = T.alloc_buffer((per_thread,), "float32", scope="local")
                            for t in T.unroll(per_thread):
                                ACC[t] = T.float32(0.0)
                            start = S_ptr[s]
                            length = S_ptr[s + 1] - start
                            for j_0 in T.serial((length + 3) // 4):
                                for j_1 in T.unroll(4):
                                    if j_0 * 4 + j_1 < length:
                                        position = start + (j_0 * 4 + j_1)
                                        col = J_indices[position]
                                        value: T.float32 = T.Cast(T.float32, A[position])
                                        for t in T.vectorized(per_thread):
                                            BL[t] = B[col, first + t]
                                        for t in T.unroll(per_thread):
                                            ACC[t] = ACC[t] + value * T.Cast(T.float32, BL[t])
                            slot = S_slot[s]
                            row = S_row[s]
                            if slot < 0:
                                for t in T.unroll(per_thread):
                                    CL[t] = T.Cast("float32", T.if_then_else(divide == 1, ACC[t] / D[row], ACC[t]))
                                for t in T.vectorized(per_thread):
                                    C[row, first + t] = CL[t]
                            else:
                                for t in T.unroll(per_thread):
                                    T.atomic_add(W[slot, first + t], ACC[t])
