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
    X = T.match_buffer(x, (batch, nb, 32), "bfloat16")
    WT = T.match_buffer(wt, (nnzb, 32, 32), "bfloat16")
    Y = T.match_buffer(y, (batch, mb, 32), "bfloat16")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnzb,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    v14: T.int32 = (batch + 3) // 4
    for i in T.thread_binding(mb, thread="blockIdx.y"):
        for n_0 in T.thread_binding(v14, thread="blockIdx.x"):
            for n_1 in T.thread_binding(4, thread="threadIdx.y"):
                if n_0 * 4 + n_1 < batch:
                    v1: T.int32 = n_0 * 4 + n_1
                    for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
                        for bi_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                            with T.block("bsr_linear_init"):
                                Y[v1, i, bi_init_0 * 32 + bi_init_1] = T.bfloat16(0.0)
                    v11: T.int32 = n_0 * 4 + n_1
                    v12: T.int64 = J_indptr[i + 1] - J_indptr[i]
                    v13: T.int64 = J_indptr[i]
                    for bi_0 in T.thread_binding(1, thread="blockIdx.z"):
                        for bi_1 in T.thread_binding(32, thread="threadIdx.x"):
                            Y_local = T.alloc_buffer((1,), "bfloat16", scope="local")
                            Y_local[0] = Y[v11, i, bi_0 * 32 + bi_1]
                            v7: T.int32 = bi_0 * 32 + bi_1
                            for j in T.serial(v12):
                                v3: T.int64 = J_indices[v13 + j]
                                v4: T.int64 = v13 + j
                                for bj in T.serial(32):
                                    with T.block("bsr_linear"):
                                        Y_local[0] = Y_local[0] + X[v11, v3, bj] * WT[v4, bj, v7]
                            Y[v11, i, bi_0 * 32 + bi_1] = Y_local[0]
