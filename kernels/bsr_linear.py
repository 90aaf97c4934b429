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
    # Dense times the transpose of a block-sparse weight, Y = X W^T, the
    # forward pass of a Linear layer whose weight W (out x in) is BSR: for
    # every output block i, Y[n, i, bi] = sum over the blocks (i, j) of
    # sum_bj X[n, j, bj] * W[i, j, bi, bj]. The blocks arrive transposed, WT
    # (nnzb, block_w, block_h), so that the innermost loop runs along a block
    # row of the output and of WT, both contiguous, while X[n, j, bj] is one
    # broadcast value: the register pattern of an SpMM, without transposing
    # the activations.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(mb)
    J = T.sp.compressed_varied(I, (nb, nnzb), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(nb)
    N = T.sp.dense_fixed(batch)
    BI = T.sp.dense_fixed(block_h)
    BJ = T.sp.dense_fixed(block_w)
    X = T.sp.match_buffer(x, (N, J_detach, BJ), "float32")
    WT = T.sp.match_buffer(wt, (I, J, BJ, BI), "float32")
    Y = T.sp.match_buffer(y, (N, I, BI), "float32")
    with T.sp.iteration([I, N, J, BJ, BI], "SSRRS", "bsr_linear") as [i, n, j, bj, bi]:
        with T.init():
            Y[n, i, bi] = 0.0
        Y[n, i, bi] = Y[n, i, bi] + X[n, j, bj] * WT[i, j, bj, bi]
