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
    # bsr_linear_grad_blocks (dW[i, j, bi, bj] = sum_n dY[n, i, bi] * X[n, j, bj]
    # for every stored block) with the batch in tiles of tile_rows: X and dY are
    # (tiles, tile_rows, ...) views of the (batch, features) matrices, so that
    # a tensor core's 16-deep reduction is a whole dimension. The reduction
    # over the tiles comes first, so that a block's init is a loop nest of its
    # own beside the update's.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(mb)
    J = T.sp.compressed_varied(I, (nb, nnzb), (indptr, indices), "int32")
    I_detach = T.sp.dense_fixed(mb)
    J_detach = T.sp.dense_fixed(nb)
    N = T.sp.dense_fixed(tiles)
    R = T.sp.dense_fixed(tile_rows)
    BI = T.sp.dense_fixed(block_h)
    BJ = T.sp.dense_fixed(block_w)
    X = T.sp.match_buffer(x, (N, R, J_detach, BJ), "float32")
    DY = T.sp.match_buffer(grad_y, (N, R, I_detach, BI), "float32")
    DW = T.sp.match_buffer(grad_blocks, (I, J, BI, BJ), "float32")
    with T.sp.iteration([I, J, N, BI, BJ, R], "SSRSSR", "grad_blocks") as [i, j, n, bi, bj, r]:
        with T.init():
            DW[i, j, bi, bj] = 0.0
        DW[i, j, bi, bj] = DW[i, j, bi, bj] + DY[n, r, i, bi] * X[n, r, j, bj]
