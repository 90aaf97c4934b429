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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"divide": 1, "feat_size": 256, "group": 4, "lanes": 32, "per_thread": 4}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float16")
    B = T.match_buffer(b, (n, 256), "float16")
    C = T.match_buffer(c, (m, 256), "float16")
    W = T.match_buffer(w, (slots, 256), "float32")
    D = T.match_buffer(lengths, (m,), "float32")
    S_row = T.match_buffer(seg_row, (segs,), "int32")
    S_ptr = T.match_buffer(seg_ptr, (segs + 1,), "int32")
    S_slot = T.match_buffer(seg_slot, (segs,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(S_row, [0, m - 1])
    T.assume_buffer_domain(S_ptr, [0, nnz])
    T.assume_buffer_domain(S_slot, [-1, slots - 1])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for s_0 in T.thread_binding((segs + 4 - 1) // 4, thread="blockIdx.x"):
        for tile in T.thread_binding(2, thread="blockIdx.y"):
            for s_1 in T.thread_binding(4, thread="threadIdx.y"):
                s: T.int32 = s_0 * 4 + s_1
                if s < segs:
                    for lane in T.thread_binding(32, thread="threadIdx.x"):
                        first: T.int32 = (tile * 32 + lane) * 4
                        if first < 256:
                            ACC = T.alloc_buffer((4,), "float32", scope="local")
                            BL = T.alloc_buffer((4,), "float16", scope="local")
                            CL = T.alloc_buffer((4,), "float16", scope="local")
                            for t in T.unroll(4):
                                ACC[t] = T.float32(0.0)
                            start: T.int32 = S_ptr[s]
                            length: T.int32 = S_ptr[s + 1] - start
                            for j_0 in T.serial((length + 3) // 4):
                                for j_1 in T.unroll(4):
                                    if j_0 * 4 + j_1 < length:
                                        position: T.int32 = start + (j_0 * 4 + j_1)
                                        col: T.int32 = J_indices[position]
                                        value: T.float32 = T.Cast("float32", A[position])
                                        for t in T.vectorized(4):
                                            BL[t] = B[col, first + t]
                                        for t in T.unroll(4):
                                            ACC[t] = ACC[t] + value * T.Cast("float32", BL[t])
                            slot: T.int32 = S_slot[s]
                            row: T.int32 = S_row[s]
                            if slot < 0:
                                for t in T.unroll(4):
                                    CL[t] = T.Cast("float16", T.Select(1 == 1, ACC[t] / D[row], ACC[t]))
                                for t in T.vectorized(4):
                                    C[row, first + t] = CL[t]
                            else:
                                for t in T.unroll(4):
                                    T.atomic_add(W[slot, first + t], ACC[t])
