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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 40, "block_w": 48, "tile_rows": 16}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (tiles, 16, nb, 48), "bfloat16")
    WT = T.match_buffer(wt, (nnzb, 48, 40), "bfloat16")
    Y = T.match_buffer(y, (tiles, 16, mb, 40), "bfloat16")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.thread_binding(mb, thread="blockIdx.y"):
        for n in T.thread_binding(tiles, thread="blockIdx.x"):
            v4: T.int32 = J_indptr[i + 1] - J_indptr[i]
            v5: T.int32 = J_indptr[i]
            for bi_init_0 in T.thread_binding(5, thread="threadIdx.y"):
                Y_local = T.alloc_buffer((16, 8), "bfloat16", scope="local")
                for r_init in T.serial(16):
                    for bi_init_1 in T.serial(8):
                        with T.block("bsr_linear_init"):
                            Y_local[r_init, bi_init_1] = T.bfloat16(0.0)
                for j in T.serial(v4):
                    WT_shared = T.alloc_buffer((48, 40), "bfloat16", scope="shared")
                    v1: T.int32 = v5 + j
                    for ax0_2 in T.serial(48):
                        for ax1_1 in T.serial(40):
                            WT_shared[ax0_2, ax1_1] = WT[v1, ax0_2, ax1_1]
                    X_shared = T.alloc_buffer((16, 48), "bfloat16", scope="shared")
                    v3: T.int32 = J_indices[v5 + j]
                    for ax0_1 in T.serial(16):
                        for ax1 in T.serial(48):
                            X_shared[ax0_1, ax1] = X[n, ax0_1, v3, ax1]
                    for bj_0 in T.serial(3):
                        for bi_1_0 in T.serial(1):
                            with T.block("bsr_linear"):
                                T.sp.mma_sync("m16n8k16", Y_local[0, bi_1_0 * 8], X_shared[0, bj_0 * 16], WT_shared[bj_0 * 16, bi_init_0 * 8 + bi_1_0 * 8], 48, 1, 40, 1)
                for ax0 in T.serial(16):
                    for ax1_o in T.unroll(1):
                        for ax1_i in T.vectorized(8):
                            Y[n, ax0, i, bi_init_0 * 8 + (ax1_o * 8 + ax1_i)] = Y_local[ax0, ax1_o * 8 + ax1_i]
