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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 16, "block_w": 8}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (batch, nb, 8), "float32")
    DY = T.match_buffer(grad_y, (batch, mb, 16), "float32")
    DW = T.match_buffer(grad_blocks, (nnzb, 16, 8), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.parallel(mb):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            DW_local = T.alloc_buffer((16, 8), "float32", scope="local")
            for bi_init in T.serial(16):
                for bj_init in T.serial(8):
                    with T.block("grad_blocks_init"):
                        DW_local[bi_init, bj_init] = T.float32(0.0)
            for n in T.serial(batch):
                v2: T.int32 = J_indices[J_indptr[i] + j]
                for bi in T.serial(16):
                    for bj_0 in T.unroll(1):
                        for bj_1 in T.vectorized(8):
                            with T.block("grad_blocks"):
                                DW_local[bi, bj_0 * 8 + bj_1] = DW_local[bi, bj_0 * 8 + bj_1] + DY[n, i, bi] * X[n, v2, bj_0 * 8 + bj_1]
            v5: T.int32 = J_indptr[i] + j
            for ax0 in T.serial(16):
                for ax1_o in T.unroll(1):
                    for ax1_i in T.vectorized(8):
                        DW[v5, ax0, ax1_o * 8 + ax1_i] = DW_local[ax0, ax1_o * 8 + ax1_i]
