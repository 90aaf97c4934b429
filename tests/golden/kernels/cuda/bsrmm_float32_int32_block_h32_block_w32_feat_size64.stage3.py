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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 32, "block_w": 32, "feat_size": 64}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, 32, 32), "float32")
    B = T.match_buffer(b, (nb, 32, 64), "float32")
    C = T.match_buffer(c, (mb, 32, 64), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.thread_binding(mb, thread="blockIdx.x"):
        v34: T.int32 = J_indptr[i + 1] - J_indptr[i]
        v35: T.int32 = J_indptr[i]
        for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
            for bi_init_1 in T.thread_binding(8, thread="threadIdx.y"):
                v29: T.int32 = bi_init_0 * 32 + bi_init_1 * 4
                for f_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                    for f_init_1 in T.thread_binding(16, thread="threadIdx.x"):
                        C_local = T.alloc_buffer((4, 4), "float32", scope="local")
                        for bi_init_2 in T.unroll(4):
                            for f_init_2 in T.vectorized(4):
                                with T.block("bsrmm_init"):
                                    C_local[bi_init_2, f_init_2] = T.float32(0.0)
                        v18: T.int32 = f_init_0 * 64 + f_init_1 * 4
                        for j in T.serial(v34):
                            v14: T.int32 = J_indices[v35 + j]
                            v16: T.int32 = v35 + j
                            for bj_0 in T.serial(8):
                                B_local = T.alloc_buffer((4, 4), "float32", scope="local")
                                for ax0_2 in T.unroll(4):
                                    v4: T.int32 = bj_0 * 4 + ax0_2
                                    for ax1_o in T.unroll(1):
                                        for ax1_i in T.vectorized(4):
                                            B_local[ax0_2, ax1_o * 4 + ax1_i] = B[v14, v4, v18 + (ax1_o * 4 + ax1_i)]
                                A_local = T.alloc_buffer((4, 4), "float32", scope="local")
                                for ax0_1 in T.unroll(4):
                                    v11: T.int32 = v29 + ax0_1
                                    for ax1_o in T.unroll(1):
                                        for ax1_i in T.vectorized(4):
                                            A_local[ax0_1, ax1_o * 4 + ax1_i] = A[v16, v11, bj_0 * 4 + (ax1_o * 4 + ax1_i)]
                                for bi_2 in T.unroll(4):
                                    for bj_1 in T.unroll(4):
                                        for f_2 in T.vectorized(4):
                                            with T.block("bsrmm"):
                                                C_local[bi_2, f_2] = C_local[bi_2, f_2] + A_local[bi_2, bj_1] * B_local[bj_1, f_2]
                        v25: T.int32 = f_init_0 * 64 + f_init_1 * 4
                        for ax0 in T.unroll(4):
                            v22: T.int32 = v29 + ax0
                            for ax1_o in T.unroll(1):
                                for ax1_i in T.vectorized(4):
                                    C[i, v22, v25 + (ax1_o * 4 + ax1_i)] = C_local[ax0, ax1_o * 4 + ax1_i]
