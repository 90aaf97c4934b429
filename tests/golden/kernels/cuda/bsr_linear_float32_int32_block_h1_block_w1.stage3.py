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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 1, "block_w": 1}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (batch, nb, 1), "float32")
    WT = T.match_buffer(wt, (nnzb, 1, 1), "float32")
    Y = T.match_buffer(y, (batch, mb, 1), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    v15: T.int32 = (batch + 127) // 128
    for i in T.thread_binding(mb, thread="blockIdx.y"):
        for n_0 in T.thread_binding(v15, thread="blockIdx.x"):
            for n_1 in T.thread_binding(128, thread="threadIdx.y"):
                if n_0 * 128 + n_1 < batch:
                    v12: T.int32 = n_0 * 128 + n_1
                    v13: T.int32 = J_indptr[i + 1] - J_indptr[i]
                    v14: T.int32 = J_indptr[i]
                    for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
                        for bi_init_1 in T.thread_binding(1, thread="threadIdx.x"):
                            Y_local = T.alloc_buffer((1,), "float32", scope="local")
                            for bi_init_2 in T.vectorized(1):
                                with T.block("bsr_linear_init"):
                                    Y_local[bi_init_0 + bi_init_1 + bi_init_2] = T.float32(0.0)
                            for j in T.serial(v13):
                                v4: T.int32 = v14 + j
                                v6: T.int32 = J_indices[v4]
                                for bj_0 in T.serial(1):
                                    WT_local = T.alloc_buffer((1, 1), "float32", scope="local")
                                    for ax0_2 in T.unroll(1):
                                        for ax1 in T.unroll(1):
                                            WT_local[ax0_2, ax1] = WT[v4, ax0_2, ax1]
                                    X_local = T.alloc_buffer((1,), "float32", scope="local")
                                    for ax0_1 in T.unroll(1):
                                        X_local[ax0_1] = X[v12, v6, ax0_1]
                                    for bj_1 in T.unroll(1):
                                        for bi_2 in T.vectorized(1):
                                            with T.block("bsr_linear"):
                                                Y_local[bi_init_0 + bi_init_1 + bi_2] = Y_local[bi_init_0 + bi_init_1 + bi_2] + X_local[bj_0 + bj_1] * WT_local[bj_0 + bj_1, bi_init_0 + bi_init_1 + bi_2]
                            for ax0 in T.unroll(1):
                                Y[v12, i, ax0] = Y_local[ax0]
