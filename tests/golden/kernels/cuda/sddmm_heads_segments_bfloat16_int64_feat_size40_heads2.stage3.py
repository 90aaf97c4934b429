@T.prim_func
def sddmm_heads_segments(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    seg_row: T.handle,
    seg_ptr: T.handle,
    indices: T.handle,
    segs: T.int32,
    m: T.int32,
    n: T.int32,
    heads: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 40, "heads": 2}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 2, 40), "bfloat16")
    Y = T.match_buffer(y, (n, 2, 40), "bfloat16")
    O = T.match_buffer(out, (nnz, 2), "bfloat16")
    I_seg_indices = T.match_buffer(seg_row, (segs,), "int64")
    J_seg_indptr = T.match_buffer(seg_ptr, (segs + 1,), "int64")
    J_seg_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(I_seg_indices, [0, m - 1])
    T.assume_buffer_domain(J_seg_indptr, [0, nnz])
    T.assume_buffer_domain(J_seg_indices, [0, n - 1])
    for s_0 in T.thread_binding((segs + 3) // 4, thread="blockIdx.x"):
        for s_1 in T.thread_binding(4, thread="threadIdx.y"):
            if s_0 * 4 + s_1 < segs:
                v1: T.int64 = T.Cast("int64", s_0 * 4 + s_1)
                for i in T.serial(T.int64(1)):
                    v0: T.int64 = (J_seg_indptr[v1 + (i + T.int64(1))] - J_seg_indptr[v1 + i] + T.int64(3)) // T.int64(4)
                    for h in T.thread_binding(2, thread="blockIdx.y"):
                        for j_0 in T.serial(v0):
                            for j_1 in T.unroll(T.int64(4)):
                                if j_0 * T.int64(4) + j_1 < J_seg_indptr[T.Cast("int64", s_0 * 4 + s_1) + (i + T.int64(1))] - J_seg_indptr[T.Cast("int64", s_0 * 4 + s_1) + i]:
                                    O_local = T.alloc_buffer((1,), "bfloat16", scope="local")
                                    with T.block("sddmm_heads_segments_init"):
                                        O_local[0] = T.bfloat16(0.0)
                                    for k_0 in T.serial(2):
                                        for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                                            if k_0 * 32 + k_1 < 40:
                                                with T.block("sddmm_heads_segments"):
                                                    O_local[0] = O_local[0] + X[I_seg_indices[T.Cast("int64", s_0 * 4 + s_1) + i], h, k_0 * 32 + k_1] * Y[J_seg_indices[J_seg_indptr[T.Cast("int64", s_0 * 4 + s_1) + i] + (j_0 * T.int64(4) + j_1)], h, k_0 * 32 + k_1]
                                    O[J_seg_indptr[T.Cast("int64", s_0 * 4 + s_1) + i] + (j_0 * T.int64(4) + j_1), h] = O_local[0]
