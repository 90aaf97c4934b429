@T.prim_func
def sddmm(
    a: T.handle,
    b: T.handle,
    x: T.handle,
    y: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (m, feat_size), "float32")
    B = T.match_buffer(b, (n, feat_size), "float32")
    X = T.match_buffer(x, (nnz,), "float32")
    Y = T.match_buffer(y, (nnz,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.serial(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            with T.block("sddmm_init"):
                Y[J_indptr[i] + j] = T.float32(0.0)
            for k in T.serial(feat_size):
                with T.block("sddmm"):
                    Y[J_indptr[i] + j] = Y[J_indptr[i] + j] + A[i, k] * B[J_indices[J_indptr[i] + j], k] * X[J_indptr[i] + j]
