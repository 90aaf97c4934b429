@T.prim_func
def bsr_linear(
    x: T.handle,
    wt: T.handle,
    y: T.handle,
    indptr: T.handle,
    indices: T.handle,
    batch: T.int32,
    mb: T.int32,
    nb: T.int32,
    nnzb: T.int32,
    block_h: T.int32,
    block_w: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 32, "block_w": 32}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (batch, nb, 32), "float32")
    WT = T.match_buffer(wt, (nnzb, 32, 32), "float32")
    Y = T.match_buffer(y, (batch, mb, 32), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    v28: T.int32 = (batch + 15) // 16
    for i in T.thread_binding(mb, thread="blockIdx.y"):
        for n_0 in T.thread_binding(v28, thread="blockIdx.x"):
            for n_1 in T.thread_binding(16, thread="threadIdx.y"):
                if n_0 * 16 + n_1 < batch:
                    v25: T.int32 = n_0 * 16 + n_1
                    v26: T.int32 = J_indptr[i + 1] - J_indptr[i]
                    v27: T.int32 = J_indptr[i]
                    for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
                        for bi_init_1 in T.thread_binding(8, thread="threadIdx.x"):
                            Y_local = T.alloc_buffer((4,), "float32", scope="local")
                            for bi_init_2 in T.vectorized(4):
                                with T.block("bsr_linear_init"):
                                    Y_local[bi_init_2] = T.float32(0.0)
                            v16: T.int32 = bi_init_0 * 32 + bi_init_1 * 4
                            for j in T.serial(v26):
                                v12: T.int32 = v27 + j
                                v15: T.int32 = J_indices[v12]
                                for bj_0 in T.serial(8):
                                    WT_local = T.alloc_buffer((4, 4), "float32", scope="local")
                                    for ax0 in T.unroll(4):
                                        v4: T.int32 = bj_0 * 4 + ax0
                                        for ax1_o in T.unroll(1):
                                            for ax1_i in T.vectorized(4):
                                                WT_local[ax0, ax1_o * 4 + ax1_i] = WT[v12, v4, v16 + (ax1_o * 4 + ax1_i)]
                                    X_local = T.alloc_buffer((4,), "float32", scope="local")
                                    for ax0_o in T.unroll(1):
                                        for ax0_i in T.vectorized(4):
                                            X_local[ax0_o * 4 + ax0_i] = X[v25, v15, bj_0 * 4 + (ax0_o * 4 + ax0_i)]
                                    for bj_1 in T.unroll(4):
                                        for bi_2 in T.vectorized(4):
                                            with T.block("bsr_linear"):
                                                Y_local[bi_2] = Y_local[bi_2] + X_local[bj_1] * WT_local[bj_1, bi_2]
                            v21: T.int32 = bi_init_0 * 32 + bi_init_1 * 4
                            for ax0_o in T.unroll(1):
                                for ax0_i in T.vectorized(4):
                                    Y[v25, i, v21 + (ax0_o * 4 + ax0_i)] = Y_local[ax0_o * 4 + ax0_i]
