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
    # bsr_linear (Y = X W^T for a block-sparse weight W, blocks arriving
    # transposed as WT) with the batch rows in tiles of tile_rows: X and Y are
    # (tiles, tile_rows, ...) views of the (batch, features) matrices, so that
    # a tensor core's 16 rows are a whole dimension (no partial tile, no
    # guard). The row loop r comes after the reduction over the row's blocks
    # j, so that a tile's init and update share the loops above j.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(mb)
    J = T.sp.compressed_varied(I, (nb, nnzb), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(nb)
    N = T.sp.dense_fixed(tiles)
    R = T.sp.dense_fixed(tile_rows)
    BI = T.sp.dense_fixed(block_h)
    BJ = T.sp.dense_fixed(block_w)
    X = T.sp.match_buffer(x, (N, R, J_detach, BJ), "float32")
    WT = T.sp.match_buffer(wt, (I, J, BJ, BI), "float32")
    Y = T.sp.match_buffer(y, (N, R, I, BI), "float32")
    with T.sp.iteration([I, N, J, R, BJ, BI], "SSRSRS", "bsr_linear") as [i, n, j, r, bj, bi]:
        with T.init():
            Y[n, r, i, bi] = 0.0
        Y[n, r, i, bi] = Y[n, r, i, bi] + X[n, r, j, bj] * WT[i, j, bj, bi]
