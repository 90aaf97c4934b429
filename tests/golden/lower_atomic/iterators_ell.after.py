@T.prim_func
def ell(
    a: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 2})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.compressed_fixed(I, (n, 4), indices, "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    pass
