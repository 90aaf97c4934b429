@T.prim_func
def bsr_linear_tiles(
    x: T.handle,
    wt: T.handle,
    y: T.handle,
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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 32, "block_w": 16, "tile_rows": 16}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (tiles, 16, nb, 16), "float16")
    WT = T.match_buffer(wt, (nnzb, 16, 32), "float16")
    Y = T.match_buffer(y, (tiles, 16, mb, 32), "float16")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.thread_binding(mb, thread="blockIdx.y"):
        for n in T.thread_binding(tiles, thread="blockIdx.x"):
            v6: T.int32 = J_indptr[i + 1] - J_indptr[i]
            v7: T.int32 = J_indptr[i]
            for bi_init_0 in T.thread_binding(1, thread="threadIdx.y"):
                Y_local = T.alloc_buffer((16, 32), "float16", scope="local")
                for r_init in T.serial(16):
                    for bi_init_1 in T.serial(32):
                        with T.block("bsr_linear_init"):
                            Y_local[r_init, bi_init_0 * 32 + bi_init_1] = T.float16(0.0)
                for j in T.serial(v6):
                    WT_shared = T.alloc_buffer((16, 32), "float16", scope="shared")
                    v2: T.int32 = v7 + j
                    for ax0_2 in T.serial(16):
                        for ax1_o in T.unroll(2):
                            for ax1_i in T.vectorized(16):
                                WT_shared[ax0_2, ax1_o * 16 + ax1_i] = WT[v2, ax0_2, ax1_o * 16 + ax1_i]
                    X_shared = T.alloc_buffer((16, 16), "float16", scope="shared")
                    v5: T.int32 = J_indices[v7 + j]
                    for ax0_1 in T.serial(16):
                        for ax1_o in T.unroll(1):
                            for ax1_i in T.vectorized(16):
                                X_shared[ax0_1, ax1_o * 16 + ax1_i] = X[n, ax0_1, v5, ax1_o * 16 + ax1_i]
                    for bj_0 in T.serial(1):
                        for bi_1_0 in T.serial(4):
                            with T.block("bsr_linear"):
                                T.sp.mma_sync("m16n8k16", Y_local[0, bi_init_0 * 32 + bi_1_0 * 8], X_shared[0, bj_0 * 16], WT_shared[bj_0 * 16, bi_init_0 * 32 + bi_1_0 * 8], 16, 1, 32, 1)
                for ax0 in T.serial(16):
                    for ax1_o in T.unroll(1):
                        for ax1_i in T.vectorized(32):
                            Y[n, ax0, i, ax1_o * 32 + ax1_i] = Y_local[ax0, ax1_o * 32 + ax1_i]
