@T.prim_func
def bcsr(
    a: T.handle,
    indptr: T.handle,
    indices: T.handle,
    mb: T.int32,
    nb: T.int32,
    nnzb: T.int32,
    block_size: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 0})
    A = T.match_buffer(a, (nnzb, block_size, block_size), "float32")
    JO_indptr = T.match_buffer(indptr, (mb + 1,), "int32")
    JO_indices = T.match_buffer(indices, (nnzb,), "int32")
    pass
