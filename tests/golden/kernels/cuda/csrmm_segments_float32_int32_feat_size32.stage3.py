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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 32}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, 32), "float32")
    C = T.match_buffer(c, (m, 32), "float32")
    I_seg_indices = T.match_buffer(seg_row, (segs,), "int32")
    J_seg_indptr = T.match_buffer(seg_ptr, (segs + 1,), "int32")
    J_seg_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(I_seg_indices, [0, m - 1])
    T.assume_buffer_domain(J_seg_indptr, [0, nnz])
    T.assume_buffer_domain(J_seg_indices, [0, n - 1])
    for s_0 in T.thread_binding((segs + 3) // 4, thread="blockIdx.x"):
        for s_1 in T.thread_binding(4, thread="threadIdx.y"):
            if s_0 * 4 + s_1 < segs:
                v4: T.int32 = s_0 * 4 + s_1
                for i in T.serial(1):
                    v2: T.int32 = (J_seg_indptr[v4 + (i + 1)] - J_seg_indptr[v4 + i] + 3) // 4
                    v3: T.int32 = I_seg_indices[v4 + i]
                    for k_0 in T.thread_binding(1, thread="blockIdx.y"):
                        for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                            C_local = T.alloc_buffer((1,), "float32", scope="local")
                            C_local[0] = T.float32(0.0)
                            for j_0 in T.serial(v2):
                                for j_1 in T.unroll(4):
                                    if j_0 * 4 + j_1 < J_seg_indptr[s_0 * 4 + s_1 + (i + 1)] - J_seg_indptr[s_0 * 4 + s_1 + i]:
                                        with T.block("csrmm_segments"):
                                            C_local[0] = C_local[0] + A[J_seg_indptr[s_0 * 4 + s_1 + i] + (j_0 * 4 + j_1)] * B[J_seg_indices[J_seg_indptr[s_0 * 4 + s_1 + i] + (j_0 * 4 + j_1)], k_0 * 32 + k_1]
                            T.atomic_add(C[v3, k_0 * 32 + k_1], C_local[0])
