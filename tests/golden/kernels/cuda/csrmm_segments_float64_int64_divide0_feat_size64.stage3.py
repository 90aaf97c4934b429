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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"divide": 0, "feat_size": 64, "group": 4, "lanes": 32, "per_thread": 2}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float64")
    B = T.match_buffer(b, (n, 64), "float64")
    C = T.match_buffer(c, (m, 64), "float64")
    W = T.match_buffer(w, (slots, 64), "float64")
    D = T.match_buffer(lengths, (m,), "float64")
    S_row = T.match_buffer(seg_row, (segs,), "int64")
    S_ptr = T.match_buffer(seg_ptr, (segs + 1,), "int64")
    S_slot = T.match_buffer(seg_slot, (segs,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(S_row, [0, m - 1])
    T.assume_buffer_domain(S_ptr, [0, nnz])
    T.assume_buffer_domain(S_slot, [-1, slots - 1])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for s_0 in T.thread_binding((segs + 4 - 1) // 4, thread="blockIdx.x"):
        for tile in T.thread_binding(1, thread="blockIdx.y"):
            for s_1 in T.thread_binding(4, thread="threadIdx.y"):
                s: T.int32 = s_0 * 4 + s_1
                if s < segs:
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        first: T.int32 = (tile * 32 + lane) * 2
                        if first < 64:
                            ACC = T.alloc_buffer((2,), "float64", scope="local")
                            BL = T.alloc_buffer((2,), "float64", scope="local")
                            CL = T.alloc_buffer((2,), "float64", scope="local")
                            for t in T.unroll(2):
                                ACC[t] = T.float64(0.0)
                            start: T.int64 = S_ptr[s]
                            length: T.int64 = S_ptr[s + 1] - start
                            for j_0 in T.serial((length + T.int64(3)) // T.int64(4)):
                                for j_1 in T.unroll(4):
                                    if j_0 * T.int64(4) + T.Cast("int64", j_1) < length:
                                        position: T.int64 = start + (j_0 * T.int64(4) + T.Cast("int64", j_1))
                                        col: T.int64 = J_indices[position]
                                        value: T.float64 = A[position]
                                        for t in T.vectorized(2):
                                            BL[t] = B[col, first + t]
                                        for t in T.unroll(2):
                                            ACC[t] = ACC[t] + value * BL[t]
                            slot: T.int64 = S_slot[s]
                            row: T.int64 = S_row[s]
                            if slot < T.int64(0):
                                for t in T.unroll(2):
                                    CL[t] = T.Select(0 == 1, ACC[t] / D[row], ACC[t])
                                for t in T.vectorized(2):
                                    C[row, first + t] = CL[t]
                            else:
                                for t in T.unroll(2):
                                    T.atomic_add(W[slot, first + t], ACC[t])
