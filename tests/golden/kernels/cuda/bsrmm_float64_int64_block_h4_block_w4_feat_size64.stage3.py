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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 4, "block_w": 4, "feat_size": 64}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, 4, 4), "float64")
    B = T.match_buffer(b, (nb, 4, 64), "float64")
    C = T.match_buffer(c, (mb, 4, 64), "float64")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnzb,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.thread_binding(mb, thread="blockIdx.x"):
        v33: T.int64 = J_indptr[i + 1] - J_indptr[i]
        v34: T.int64 = J_indptr[i]
        for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
            for bi_init_1 in T.thread_binding(1, thread="threadIdx.y"):
                v28: T.int32 = (bi_init_0 + bi_init_1) * 4
                for f_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                    for f_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                        C_local = T.alloc_buffer((4, 2), "float64", scope="local")
                        for bi_init_2 in T.unroll(4):
                            v0: T.int32 = v28 + bi_init_2
                            for f_init_2 in T.vectorized(2):
                                with T.block("bsrmm_init"):
                                    C_local[v0, f_init_2] = T.float64(0.0)
                        v20: T.int32 = f_init_0 * 64 + f_init_1 * 2
                        for j in T.serial(v33):
                            v16: T.int64 = J_indices[v34 + j]
                            v18: T.int64 = v34 + j
                            for bj_0 in T.serial(2):
                                B_local = T.alloc_buffer((2, 2), "float64", scope="local")
                                for ax0_2 in T.unroll(2):
                                    v6: T.int32 = bj_0 * 2 + ax0_2
                                    for ax1_o in T.unroll(1):
                                        for ax1_i in T.vectorized(2):
                                            B_local[ax0_2, ax1_o * 2 + ax1_i] = B[v16, v6, v20 + (ax1_o * 2 + ax1_i)]
                                A_local = T.alloc_buffer((4, 2), "float64", scope="local")
                                for ax0_1 in T.unroll(4):
                                    for ax1_o in T.unroll(1):
                                        for ax1_i in T.vectorized(2):
                                            A_local[ax0_1, ax1_o * 2 + ax1_i] = A[v18, ax0_1, bj_0 * 2 + (ax1_o * 2 + ax1_i)]
                                for bi_2 in T.unroll(4):
                                    v14: T.int32 = v28 + bi_2
                                    for bj_1 in T.unroll(2):
                                        for f_2 in T.vectorized(2):
                                            with T.block("bsrmm"):
                                                C_local[v14, f_2] = C_local[v14, f_2] + A_local[v14, bj_1] * B_local[bj_1, f_2]
                        v24: T.int32 = f_init_0 * 64 + f_init_1 * 2
                        for ax0 in T.unroll(4):
                            for ax1_o in T.unroll(1):
                                for ax1_i in T.vectorized(2):
                                    C[i, ax0, v24 + (ax1_o * 2 + ax1_i)] = C_local[ax0, ax1_o * 2 + ax1_i]
