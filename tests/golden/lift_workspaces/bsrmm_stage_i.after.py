@T.prim_func
def bsrmm_stage_i(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    nb: T.int32,
    mb: T.int32,
    nnzb: T.int32,
    blk: T.int32,
    feat_size: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, blk, blk), "float32")
    B = T.match_buffer(b, (mb, blk, feat_size), "float32")
    C = T.match_buffer(c, (nb, blk, feat_size), "float32")
    J_indptr = T.match_buffer(indptr, (nb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, mb - 1])
    for i in T.serial(nb):
        for bi in T.serial(blk):
            for f_init in T.serial(feat_size):
                with T.block("bsrmm_init"):
                    C[i, bi, f_init] = T.float32(0.0)
            for bj in T.serial(blk):
                for f in T.serial(feat_size):
                    for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
                        with T.block("bsrmm"):
                            C[i, bi, f] = C[i, bi, f] + A[J_indptr[i] + j, bi, bj] * B[J_indices[J_indptr[i] + j], bj, f]
