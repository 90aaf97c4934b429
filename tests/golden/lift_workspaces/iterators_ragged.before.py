@T.prim_func
def ragged(
    a: T.handle,
    indptr: T.handle,
    m: T.int32,
    n: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 0})
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    A = T.match_buffer(a, (J_indptr[m],), "float32")
    pass
