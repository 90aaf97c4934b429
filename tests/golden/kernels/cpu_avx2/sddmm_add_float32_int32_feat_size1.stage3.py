@T.prim_func
def sddmm_add(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 1}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 1), "float32")
    Y = T.match_buffer(y, (n, 1), "float32")
    O = T.match_buffer(out, (nnz, 1), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + 32) < nnz:
                T.prefetch(Y[J_indices[J_indptr[i] + (j + 32)], 0], 1)
            v0: T.int32 = J_indptr[i] + j
            v1: T.int32 = J_indices[v0]
            for f in T.serial(1):
                with T.block("sddmm_add"):
                    O[v0, f] = X[i, f] + Y[v1, f]
