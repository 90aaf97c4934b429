@T.prim_func
def bsrmm(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    mb: T.int32,
    nb: T.int32,
    nnzb: T.int32,
    block_h: T.int32,
    block_w: T.int32,
    feat_size: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 32, "block_w": 16, "feat_size": 24}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, 32, 16), "float16")
    B = T.match_buffer(b, (nb, 16, 24), "float16")
    C = T.match_buffer(c, (mb, 32, 24), "float16")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.thread_binding(mb, thread="blockIdx.x"):
        v9: T.int32 = J_indptr[i + 1] - J_indptr[i]
        v10: T.int32 = J_indptr[i]
        for bi_init_0 in T.thread_binding(2, thread="threadIdx.y"):
            for f_init_0 in T.thread_binding(3, thread="blockIdx.y"):
                C_local = T.alloc_buffer((16, 8), "float16", scope="local")
                for bi_init_1 in T.serial(16):
                    for f_init_1 in T.serial(8):
                        with T.block("bsrmm_init"):
                            C_local[bi_init_1, f_init_1] = T.float16(0.0)
                for j in T.serial(v9):
                    B_shared = T.alloc_buffer((16, 8), "float16", scope="shared")
                    v1: T.int32 = J_indices[v10 + j]
                    for ax0_2 in T.serial(16):
                        for ax1 in T.unroll(8):
                            B_shared[ax0_2, ax1] = B[v1, ax0_2, f_init_0 * 8 + ax1]
                    A_shared = T.alloc_buffer((32, 16), "float16", scope="shared")
                    v4: T.int32 = v10 + j
                    for ax0_1 in T.serial(32):
                        for ax1_o in T.unroll(1):
                            for ax1_i in T.vectorized(16):
                                A_shared[ax0_1, ax1_o * 16 + ax1_i] = A[v4, ax0_1, ax1_o * 16 + ax1_i]
                    for bj_0 in T.serial(1):
                        for f_1_0 in T.serial(1):
                            with T.block("bsrmm"):
                                T.sp.mma_sync("m16n8k16", C_local[0, f_1_0 * 8], A_shared[bi_init_0 * 16, bj_0 * 16], B_shared[bj_0 * 16, f_1_0 * 8], 16, 1, 8, 1)
                for ax0 in T.unroll(16):
                    v6: T.int32 = bi_init_0 * 16 + ax0
                    for ax1_o in T.unroll(1):
                        for ax1_i in T.vectorized(8):
                            C[i, v6, f_init_0 * 8 + (ax1_o * 8 + ax1_i)] = C_local[ax0, ax1_o * 8 + ax1_i]
