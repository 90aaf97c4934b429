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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"block_h": 1, "block_w": 1}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (batch, nb, 1), "float32")
    WT = T.match_buffer(wt, (nnzb, 1, 1), "float32")
    Y = T.match_buffer(y, (batch, mb, 1), "float32")
    J_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnzb,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnzb])
    T.assume_buffer_domain(J_indices, [0, nb - 1])
    for i in T.parallel(mb):
        for n in T.serial(batch):
            Y_local = T.alloc_buffer((1,), "float32", scope="local")
            for bi_init in T.serial(1):
                with T.block("bsr_linear_init"):
                    Y_local[bi_init] = T.float32(0.0)
            for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
                v2: T.int32 = J_indices[J_indptr[i] + j]
                v3: T.int32 = J_indptr[i] + j
                for bj in T.serial(1):
                    for bi in T.serial(1):
                        with T.block("bsr_linear"):
                            Y_local[bi] = Y_local[bi] + X[n, v2, bj] * WT[v3, bj, bi]
            for ax0 in T.unroll(1):
                Y[n, i, ax0] = Y_local[ax0]
