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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 1})
    I = T.sp.dense_fixed(nb, "int32")
    J = T.sp.compressed_varied(I, (mb, nnzb), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(mb, "int32")
    BI = T.sp.dense_fixed(blk, "int32")
    BJ = T.sp.dense_fixed(blk, "int32")
    F = T.sp.dense_fixed(feat_size, "int32")
    J_dense = T.sp.dense_varied(I, (mb, nnzb), indptr, "int32")
    A = T.sp.match_buffer(a, (I, J, BI, BJ), "float32")
    B = T.sp.match_buffer(b, (J_detach, BJ, F), "float32")
    C = T.sp.match_buffer(c, (I, BI, F), "float32")
    J_indptr = T.sp.match_buffer(indptr, (I,), "int32", extra_storage=1)
    J_indices = T.sp.match_buffer(indices, (I, J_dense), "int32")
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
                            C[i, bi, f] = C[i, bi, f] + A[i, j, bi, bj] * B[J_indices[i, j], bj, f]
