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
    # The gradient of bsr_linear's kept blocks, a block-sampled product over
    # the batch: dW[i, j, bi, bj] = sum_n dY[n, i, bi] * X[n, j, bj] for every
    # stored block (i, j), without gathering copies of dY and X. The block's
    # tile accumulates in place while the batch streams past it.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(mb)
    J = T.sp.compressed_varied(I, (nb, nnzb), (indptr, indices), "int32")
    I_detach = T.sp.dense_fixed(mb)
    J_detach = T.sp.dense_fixed(nb)
    N = T.sp.dense_fixed(batch)
    BI = T.sp.dense_fixed(block_h)
    BJ = T.sp.dense_fixed(block_w)
    X = T.sp.match_buffer(x, (N, J_detach, BJ), "float32")
    DY = T.sp.match_buffer(grad_y, (N, I_detach, BI), "float32")
    DW = T.sp.match_buffer(grad_blocks, (I, J, BI, BJ), "float32")
    with T.sp.iteration([I, J, N, BI, BJ], "SSRSS", "grad_blocks") as [i, j, n, bi, bj]:
        with T.init():
            DW[i, j, bi, bj] = 0.0
        DW[i, j, bi, bj] = DW[i, j, bi, bj] + DY[n, i, bi] * X[n, j, bj]
