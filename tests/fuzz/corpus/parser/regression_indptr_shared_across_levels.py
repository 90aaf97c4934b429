@T.prim_func
def f(a: T.handle, indptr_j: T.handle, indices_j: T.handle, indices_k: T.handle, d0: T.int32, d1: T.int32, d2: T.int32, nnz_j: T.int32, nnz_k: T.int32) -> None:
    T.func_attr({"sparse_tir_level": 2})
    I = T.sp.dense_fixed(d0)
    J = T.sp.compressed_varied(I, (d1, nnz_j), (indptr_j, indices_j), "int32")
    K = T.sp.compressed_varied(J, (d2, nnz_k), (indptr_j, indices_k), "int32")
    A = T.sp.match_buffer(a, (I, J, K), "float32")
    with T.sp.iteration([I, J, K], "SSS", "f") as [i, j, k]:
        A[i, j, k] = 1.0
