@T.prim_func
def ragged(
    a: T.handle,
    indptr: T.handle,
    m: T.int32,
    n: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 2})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.dense_varied(I, n, indptr, "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    pass
