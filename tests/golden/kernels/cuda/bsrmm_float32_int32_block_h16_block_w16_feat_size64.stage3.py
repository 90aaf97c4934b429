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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 16, "block_w": 16, "feat_size": 64}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, 16, 16), "float32")
    B = T.match_buffer(b, (nb, 16, 64), "float32")
    C = T.match_buffer(c, (mb, 16, 64), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.thread_binding(mb, thread="blockIdx.x"):
        for bi_init in T.thread_binding(16, thread="blockIdx.z"):
            for f_init_0 in T.thread_binding(2, thread="blockIdx.y"):
                for f_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                    with T.block("bsrmm_init"):
                        C[i, bi_init, f_init_0 * 32 + f_init_1] = T.float32(0.0)
        v8: T.int32 = J_indptr[i + 1] - J_indptr[i]
        v9: T.int32 = J_indptr[i]
        for bi in T.thread_binding(16, thread="blockIdx.z"):
            for f_0 in T.thread_binding(2, thread="blockIdx.y"):
                for f_1 in T.thread_binding(32, thread="threadIdx.x"):
                    C_local = T.alloc_buffer((1,), "float32", scope="local")
                    C_local[0] = C[i, bi, f_0 * 32 + f_1]
                    v3: T.int32 = f_0 * 32 + f_1
                    for j in T.serial(v8):
                        v0: T.int32 = v9 + j
                        v1: T.int32 = J_indices[v0]
                        for bj in T.serial(16):
                            with T.block("bsrmm"):
                                C_local[0] = C_local[0] + A[v0, bi, bj] * B[v1, bj, v3]
                    C[i, bi, f_0 * 32 + f_1] = C_local[0]
