@T.prim_func
def bsr_linear_grad_blocks_tiles(
    x: T.handle,
    grad_y: T.handle,
    grad_blocks: T.handle,
    indptr: T.handle,
    indices: T.handle,
    tiles: T.int32,
    tile_rows: T.int32,
    mb: T.int32,
    nb: T.int32,
    nnzb: T.int32,
    block_h: T.int32,
    block_w: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 16, "block_w": 32, "tile_rows": 16}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (tiles, 16, nb, 32), "float16")
    DY = T.match_buffer(grad_y, (tiles, 16, mb, 16), "float16")
    DW = T.match_buffer(grad_blocks, (nnzb, 16, 32), "float16")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for ij in T.thread_binding(nnzb, thread="blockIdx.x"):
        i_flat: T.int32 = T.sp.lower_bound(indptr, 0, mb + 1, ij + 1) - 1
        i: T.int32 = i_flat
        j: T.int32 = ij - J_indptr[i]
        v9: T.int32 = J_indices[J_indptr[i] + j]
        v10: T.int32 = J_indptr[i] + j
        for bi_init_0 in T.thread_binding(1, thread="threadIdx.y"):
            for bj_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                DW_local = T.alloc_buffer((16, 32), "float16", scope="local")
                for bi_init_1 in T.serial(16):
                    v0: T.int32 = bi_init_0 * 16 + bi_init_1
                    for bj_init_1 in T.serial(32):
                        with T.block("grad_blocks_init"):
                            DW_local[v0, bj_init_0 * 32 + bj_init_1] = T.float16(0.0)
                for n in T.serial(tiles):
                    X_shared = T.alloc_buffer((16, 32), "float16", scope="shared")
                    for ax0_2 in T.serial(16):
                        for ax1_o in T.unroll(2):
                            for ax1_i in T.vectorized(16):
                                X_shared[ax0_2, ax1_o * 16 + ax1_i] = X[n, ax0_2, v9, ax1_o * 16 + ax1_i]
                    DY_shared = T.alloc_buffer((16, 16), "float16", scope="shared")
                    for ax0_1 in T.serial(16):
                        for ax1_o in T.unroll(1):
                            for ax1_i in T.vectorized(16):
                                DY_shared[ax0_1, ax1_o * 16 + ax1_i] = DY[n, ax0_1, i, ax1_o * 16 + ax1_i]
                    for bj_1_0 in T.serial(4):
                        with T.block("grad_blocks"):
                            T.sp.mma_sync("m16n8k16", DW_local[bi_init_0 * 16, bj_init_0 * 32 + bj_1_0 * 8], DY_shared[0, bi_init_0 * 16], X_shared[0, bj_init_0 * 32 + bj_1_0 * 8], 1, 16, 32, 1)
                for ax0 in T.serial(16):
                    for ax1_o in T.unroll(1):
                        for ax1_i in T.vectorized(32):
                            DW[v10, ax0, ax1_o * 32 + ax1_i] = DW_local[ax0, ax1_o * 32 + ax1_i]
