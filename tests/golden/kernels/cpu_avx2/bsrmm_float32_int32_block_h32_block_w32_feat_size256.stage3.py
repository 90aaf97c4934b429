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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 32, "block_w": 32, "feat_size": 256}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, 32, 32), "float32")
    B = T.match_buffer(b, (nb, 32, 256), "float32")
    C = T.match_buffer(c, (mb, 32, 256), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.parallel(mb):
        C_local = T.alloc_buffer((32, 256), "float32", scope="local")
        for bi_init in T.serial(32):
            for f_init in T.serial(256):
                with T.block("bsrmm_init"):
                    C_local[bi_init, f_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            v8: T.int32 = J_indices[J_indptr[i] + j]
            v9: T.int32 = J_indptr[i] + j
            for f_0 in T.serial(4):
                B_local = T.alloc_buffer((32, 64), "float32", scope="local")
                for ax0 in T.serial(32):
                    for ax1_o in T.unroll(8):
                        for ax1_i in T.vectorized(8):
                            B_local[ax0, ax1_o * 8 + ax1_i] = B[v8, ax0, f_0 * 64 + (ax1_o * 8 + ax1_i)]
                for bi in T.serial(32):
                    for bj in T.serial(32):
                        for f_1 in T.unroll(8):
                            v3: T.int32 = (f_0 * 8 + f_1) * 8
                            for f_2 in T.vectorized(8):
                                with T.block("bsrmm"):
                                    C_local[bi, v3 + f_2] = C_local[bi, v3 + f_2] + A[v9, bi, bj] * B_local[bj, f_1 * 8 + f_2]
        for ax0_1 in T.serial(32):
            for ax1_o in T.unroll(32):
                for ax1_i in T.vectorized(8):
                    C[i, ax0_1, ax1_o * 8 + ax1_i] = C_local[ax0_1, ax1_o * 8 + ax1_i]
