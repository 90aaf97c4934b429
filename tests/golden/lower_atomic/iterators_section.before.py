@T.prim_func
def iterators(
    indices_1: T.handle,
    indptr_2: T.handle,
    indptr_3: T.handle,
    indices_3: T.handle,
    a: T.handle,
    b: T.handle,
    m: T.int32,
    n: T.int32,
    n1: T.int32,
    c: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 2})
    I = T.sp.dense_fixed(m, "int32")
    J1 = T.sp.compressed_fixed(I, (n, c), indices_1, "int32")
    J2 = T.sp.dense_varied(I, n, indptr_2, "int32")
    J3 = T.sp.compressed_varied(J1, (n1, nnz), (indptr_3, indices_3), "int64")
    A = T.sp.match_buffer(a, (I, J1), "float32")
    B = T.sp.alloc_buffer((I, J2), "float32", scope="shared")
    pass
