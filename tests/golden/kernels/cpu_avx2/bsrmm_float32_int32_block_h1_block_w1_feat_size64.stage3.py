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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 1, "block_w": 1, "feat_size": 64}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, 1, 1), "float32")
    B = T.match_buffer(b, (nb, 1, 64), "float32")
    C = T.match_buffer(c, (mb, 1, 64), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.parallel(mb):
        C_local = T.alloc_buffer((1, 64), "float32", scope="local")
        for bi_init in T.serial(1):
            for f_init in T.serial(64):
                with T.block("bsrmm_init"):
                    C_local[bi_init, f_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v6: T.int32 = J_indptr[i] + j
            v7: T.int32 = J_indices[v6]
            for bi in T.serial(1):
                for bj in T.serial(1):
                    for f_0 in T.unroll(8):
                        for f_1 in T.vectorized(8):
                            with T.block("bsrmm"):
                                C_local[bi, f_0 * 8 + f_1] = C_local[bi, f_0 * 8 + f_1] + A[v6, bi, bj] * B[v7, bj, f_0 * 8 + f_1]
        for ax0 in T.unroll(1):
            for ax1_o in T.unroll(8):
                for ax1_i in T.vectorized(8):
                    C[i, ax0, ax1_o * 8 + ax1_i] = C_local[ax0, ax1_o * 8 + ax1_i]
