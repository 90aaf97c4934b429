@T.prim_func
def bsr_linear_grad_blocks(
    x: T.handle,
    grad_y: T.handle,
    grad_blocks: T.handle,
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
    DY = T.match_buffer(grad_y, (batch, mb, 32), "float32")
    DW = T.match_buffer(grad_blocks, (nnzb, 32, 32), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for ij in T.thread_binding(nnzb, thread="blockIdx.x"):
        i_flat: T.int32 = T.sp.lower_bound(indptr, 0, mb + 1, ij + 1) - 1
        i: T.int32 = i_flat
        j: T.int32 = ij - J_indptr[i]
        v5: T.int32 = J_indptr[i] + j
        for bi_init_0 in T.thread_binding(1, thread="blockIdx.z"):
            for bi_init_1 in T.thread_binding(32, thread="threadIdx.y"):
                v3: T.int32 = bi_init_0 * 32 + bi_init_1
                for bj_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                    for bj_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                        with T.block("grad_blocks_init"):
                            DW[v5, v3, bj_init_0 * 32 + bj_init_1] = T.float32(0.0)
        v16: T.int32 = J_indptr[i] + j
        v17: T.int32 = J_indices[v16]
        for bi_0 in T.thread_binding(1, thread="blockIdx.z"):
            for bi_1 in T.thread_binding(32, thread="threadIdx.y"):
                v12: T.int32 = bi_0 * 32 + bi_1
                for bj_0 in T.thread_binding(1, thread="blockIdx.y"):
                    for bj_1 in T.thread_binding(32, thread="threadIdx.x"):
                        DW_local = T.alloc_buffer((1,), "float32", scope="local")
                        DW_local[0] = DW[v16, v12, bj_0 * 32 + bj_1]
                        v7: T.int32 = bj_0 * 32 + bj_1
                        for n in T.serial(batch):
                            with T.block("grad_blocks"):
                                DW_local[0] = DW_local[0] + DY[n, i, v12] * X[n, v17, v7]
                        DW[v16, v12, bj_0 * 32 + bj_1] = DW_local[0]
