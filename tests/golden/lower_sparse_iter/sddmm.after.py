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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 1})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n, "int32")
    K = T.sp.dense_fixed(feat_size, "int32")
    J_dense = T.sp.dense_varied(I, (n, nnz), indptr, "int32")
    A = T.sp.match_buffer(a, (I, K), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    X = T.sp.match_buffer(x, (I, J), "float32")
    Y = T.sp.match_buffer(y, (I, J), "float32")
    J_indptr = T.sp.match_buffer(indptr, (I,), "int32", extra_storage=1)
    J_indices = T.sp.match_buffer(indices, (I, J_dense), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.serial(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            with T.block("sddmm_init"):
                Y[i, j] = T.float32(0.0)
            for k in T.serial(feat_size):
                with T.block("sddmm"):
                    Y[i, j] = Y[i, j] + A[i, k] * B[J_indices[i, j], k] * X[i, j]
