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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 4, "block_w": 8, "feat_size": 20}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, 4, 8), "float32")
    B = T.match_buffer(b, (nb, 8, 20), "float32")
    C = T.match_buffer(c, (mb, 4, 20), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.thread_binding(mb, thread="blockIdx.x"):
        v17: T.int32 = J_indptr[i + 1] - J_indptr[i]
        for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
            for bi_init_1 in T.thread_binding(1, thread="threadIdx.y"):
                for f_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                    for f_init_1 in T.thread_binding(8, thread="threadIdx.x"):
                        C_local = T.alloc_buffer((4, 4), "float32", scope="local")
                        for bi_init_2 in T.unroll(4):
                            for f_init_2 in T.vectorized(4):
                                if f_init_0 * 8 + f_init_1 < 5:
                                    with T.block("bsrmm_init"):
                                        C_local[(bi_init_0 + bi_init_1) * 4 + bi_init_2, f_init_2] = T.float32(0.0)
                        for j in T.serial(v17):
                            for bj_0 in T.serial(2):
                                B_local = T.alloc_buffer((4, 4), "float32", scope="local")
                                if f_init_0 * 8 + f_init_1 < 5:
                                    v6: T.int32 = J_indices[J_indptr[i] + j]
                                    v7: T.int32 = f_init_0 * 32 + f_init_1 * 4
                                    for ax0_2 in T.unroll(4):
                                        v4: T.int32 = bj_0 * 4 + ax0_2
                                        for ax1_o in T.unroll(1):
                                            for ax1_i in T.vectorized(4):
                                                B_local[ax0_2, ax1_o * 4 + ax1_i] = B[v6, v4, v7 + (ax1_o * 4 + ax1_i)]
                                A_local = T.alloc_buffer((4, 4), "float32", scope="local")
                                if f_init_0 * 8 + f_init_1 < 5:
                                    v10: T.int32 = J_indptr[i] + j
                                    for ax0_1 in T.unroll(4):
                                        for ax1_o in T.unroll(1):
                                            for ax1_i in T.vectorized(4):
                                                A_local[ax0_1, ax1_o * 4 + ax1_i] = A[v10, ax0_1, bj_0 * 4 + (ax1_o * 4 + ax1_i)]
                                for bi_2 in T.unroll(4):
                                    for bj_1 in T.unroll(4):
                                        for f_2 in T.vectorized(4):
                                            if f_init_0 * 8 + f_init_1 < 5:
                                                with T.block("bsrmm"):
                                                    C_local[(bi_init_0 + bi_init_1) * 4 + bi_2, f_2] = C_local[(bi_init_0 + bi_init_1) * 4 + bi_2, f_2] + A_local[(bi_init_0 + bi_init_1) * 4 + bi_2, bj_1] * B_local[bj_1, f_2]
                        if f_init_0 * 8 + f_init_1 < 5:
                            v13: T.int32 = f_init_0 * 32 + f_init_1 * 4
                            for ax0 in T.unroll(4):
                                for ax1_o in T.unroll(1):
                                    for ax1_i in T.vectorized(4):
                                        C[i, ax0, v13 + (ax1_o * 4 + ax1_i)] = C_local[ax0, ax1_o * 4 + ax1_i]
