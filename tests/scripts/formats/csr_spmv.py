# CSR sparse matrix-vector product y = A x
@T.prim_func
def csr_spmv(
    a: T.handle,
    x: T.handle,
    y: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    A = T.sp.match_buffer(a, (I, J), "float32")
    X = T.sp.match_buffer(x, (J_detach,), "float32")
    Y = T.sp.match_buffer(y, (I,), "float32")
    with T.sp.iteration([I, J], "SR", "spmv") as [i, j]:
        with T.init():
            Y[i] = 0.0
        Y[i] = Y[i] + A[i, j] * X[j]
