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
    v12: T.int32 = (batch + 127) // 128
    for i in T.thread_binding(mb, thread="blockIdx.y"):
        for n_0 in T.thread_binding(v12, thread="blockIdx.x"):
            for n_1 in T.thread_binding(128, thread="threadIdx.y"):
                if n_0 * 128 + n_1 < batch:
                    v1: T.int32 = n_0 * 128 + n_1
                    for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
                        for bi_init_1 in T.thread_binding(1, thread="threadIdx.x"):
                            with T.block("bsr_linear_init"):
                                Y[v1, i, bi_init_0 + bi_init_1] = T.float32(0.0)
                    v9: T.int32 = n_0 * 128 + n_1
                    v10: T.int32 = J_indptr[i + 1] - J_indptr[i]
                    v11: T.int32 = J_indptr[i]
                    for bi_0 in T.thread_binding(1, thread="blockIdx.z"):
                        for bi_1 in T.thread_binding(1, thread="threadIdx.x"):
                            Y_local = T.alloc_buffer((1,), "float32", scope="local")
                            Y_local[0] = Y[v9, i, bi_0 + bi_1]
                            for j in T.serial(v10):
                                v3: T.int32 = J_indices[v11 + j]
                                v4: T.int32 = v11 + j
                                for bj in T.serial(1):
                                    with T.block("bsr_linear"):
                                        Y_local[0] = Y_local[0] + X[v9, v3, bj] * WT[v4, bj, bi_0 + bi_1]
                            Y[v9, i, bi_0 + bi_1] = Y_local[0]
