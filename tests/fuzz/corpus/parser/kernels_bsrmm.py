@T.prim_func
def bsrmm(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    mb: T.int32,
    nb: T.int32,
    nnzb: T.int32,
    block_h: T.int32,
    block_w: T.int32,
    feat_size: T.int32,
) -> None:
    # Block-sparse (BSR) times dense: C[i, bi, f] = sum over the non-zero blocks
    # (i, j) of sum_bj A[i, j, bi, bj] * B[j, bj, f]. Blocks are block_h x
    # block_w, stored as (nnzb, block_h, block_w) like torch's and scipy's BSR.
    # The block loop runs outside the in-block loops so each block is read once.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(mb)
    J = T.sp.compressed_varied(I, (nb, nnzb), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(nb)
    BI = T.sp.dense_fixed(block_h)
    BJ = T.sp.dense_fixed(block_w)
    F = T.sp.dense_fixed(feat_size)
    A = T.sp.match_buffer(a, (I, J, BI, BJ), "float32")
    B = T.sp.match_buffer(b, (J_detach, BJ, F), "float32")
    C = T.sp.match_buffer(c, (I, BI, F), "float32")
    with T.sp.iteration([I, J, BI, BJ, F], "SRSRS", "bsrmm") as [i, j, bi, bj, f]:
        with T.init():
            C[i, bi, f] = 0.0
        C[i, bi, f] = C[i, bi, f] + A[i, j, bi, bj] * B[j, bj, f]
