@T.prim_func
def dcsr(
    a: T.handle,
    indptr_i: T.handle,
    indices_i: T.handle,
    indptr_j: T.handle,
    indices_j: T.handle,
    m: T.int32,
    n: T.int32,
    nnz1: T.int32,
    nnz2: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 2})
    O = T.sp.dense_fixed(1, "int32")
    I = T.sp.compressed_varied(O, (m, nnz1), (indptr_i, indices_i), "int32")
    J = T.sp.compressed_varied(I, (n, nnz2), (indptr_j, indices_j), "int32")
    A = T.sp.match_buffer(a, (O, I, J), "float32")
    pass
