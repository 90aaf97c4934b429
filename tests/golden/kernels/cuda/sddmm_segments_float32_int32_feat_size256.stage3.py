@T.prim_func
def sddmm_segments(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    seg_row: T.handle,
    seg_ptr: T.handle,
    indices: T.handle,
    segs: T.int32,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 256}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 256), "float32")
    Y = T.match_buffer(y, (n, 256), "float32")
    O = T.match_buffer(out, (nnz,), "float32")
    I_seg_indices = T.match_buffer(seg_row, (segs,), "int32")
    J_seg_indptr = T.match_buffer(seg_ptr, (segs + 1,), "int32")
    J_seg_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(I_seg_indices, [0, m - 1])
    T.assume_buffer_domain(J_seg_indptr, [0, nnz])
    T.assume_buffer_domain(J_seg_indices, [0, n - 1])
    for s_0 in T.thread_binding((segs + 3) // 4, thread="blockIdx.x"):
        for s_1 in T.thread_binding(4, thread="threadIdx.y"):
            if s_0 * 4 + s_1 < segs:
                v12: T.int32 = s_0 * 4 + s_1
                for i in T.serial(1):
                    for j_0 in T.serial((J_seg_indptr[v12 + (i + 1)] - J_seg_indptr[v12 + i] + 3) // 4):
                        for j_1 in T.unroll(4):
                            if j_0 * 4 + j_1 < J_seg_indptr[s_0 * 4 + s_1 + (i + 1)] - J_seg_indptr[s_0 * 4 + s_1 + i]:
                                O_local = T.alloc_buffer((1,), "float32", scope="local")
                                with T.block("sddmm_segments_init"):
                                    O_local[0] = T.float32(0.0)
                                v10: T.int32 = J_seg_indices[J_seg_indptr[s_0 * 4 + s_1 + i] + (j_0 * 4 + j_1)]
                                v11: T.int32 = I_seg_indices[s_0 * 4 + s_1 + i]
                                for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                                    for k_0 in T.serial(2):
                                        Y_local = T.alloc_buffer((4,), "float32", scope="local")
                                        v3: T.int32 = k_0 * 128 + k_1 * 4
                                        for ax0_o in T.unroll(1):
                                            for ax0_i in T.vectorized(4):
                                                Y_local[ax0_o * 4 + ax0_i] = Y[v10, v3 + (ax0_o * 4 + ax0_i)]
                                        X_local = T.alloc_buffer((4,), "float32", scope="local")
                                        v7: T.int32 = k_0 * 128 + k_1 * 4
                                        for ax0_o in T.unroll(1):
                                            for ax0_i in T.vectorized(4):
                                                X_local[ax0_o * 4 + ax0_i] = X[v11, v7 + (ax0_o * 4 + ax0_i)]
                                        for k_2 in T.unroll(4):
                                            with T.block("sddmm_segments"):
                                                O_local[0] = O_local[0] + X_local[k_2] * Y_local[k_2]
                                O[J_seg_indptr[s_0 * 4 + s_1 + i] + (j_0 * 4 + j_1)] = O_local[0]
