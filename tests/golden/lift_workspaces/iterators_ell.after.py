@T.prim_func
def ell(
    a: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 0})
    A = T.match_buffer(a, (m * 4,), "float32")
    J_indices = T.match_buffer(indices, (m * 4,), "int32")
    pass
