@T.prim_func
def csrmm_segments(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    seg_row: T.handle,
    seg_ptr: T.handle,
    indices: T.handle,
    segs: T.int32,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float64")
    B = T.match_buffer(b, (n, 64), "float64")
    C = T.match_buffer(c, (m, 64), "float64")
    I_seg_indices = T.match_buffer(seg_row, (segs,), "int64")
    J_seg_indptr = T.match_buffer(seg_ptr, (segs + 1,), "int64")
    J_seg_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(I_seg_indices, [0, m - 1])
    T.assume_buffer_domain(J_seg_indptr, [0, nnz])
    T.assume_buffer_domain(J_seg_indices, [0, n - 1])
    for s_0 in T.thread_binding((segs + 3) // 4, thread="blockIdx.x"):
        for s_1 in T.thread_binding(4, thread="threadIdx.y"):
            if s_0 * 4 + s_1 < segs:
                v9: T.int64 = T.Cast("int64", s_0 * 4 + s_1)
                for i in T.serial(T.int64(1)):
                    v7: T.int64 = (J_seg_indptr[v9 + (i + T.int64(1))] - J_seg_indptr[v9 + i] + T.int64(3)) // T.int64(4)
                    v8: T.int64 = I_seg_indices[v9 + i]
                    for k_0 in T.thread_binding(1, thread="blockIdx.y"):
                        for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                            C_local = T.alloc_buffer((2,), "float64", scope="local")
                            for ax0_o in T.unroll(1):
                                for ax0_i in T.vectorized(2):
                                    C_local[ax0_o * 2 + ax0_i] = T.float64(0.0)
                            for j_0 in T.serial(v7):
                                for j_1 in T.unroll(T.int64(4)):
                                    if j_0 * T.int64(4) + j_1 < J_seg_indptr[T.Cast("int64", s_0 * 4 + s_1) + (i + T.int64(1))] - J_seg_indptr[T.Cast("int64", s_0 * 4 + s_1) + i]:
                                        v0: T.int64 = J_seg_indptr[T.Cast("int64", s_0 * 4 + s_1) + i] + (j_0 * T.int64(4) + j_1)
                                        v1: T.int64 = J_seg_indices[v0]
                                        v2: T.int32 = (k_0 * 32 + k_1) * 2
                                        for k_2 in T.vectorized(2):
                                            with T.block("csrmm_segments"):
                                                C_local[k_2] = C_local[k_2] + A[v0] * B[v1, v2 + k_2]
                            v4: T.int32 = k_0 * 64 + k_1 * 2
                            for ax0 in T.unroll(2):
                                T.atomic_add(C[v8, v4 + ax0], C_local[ax0])
