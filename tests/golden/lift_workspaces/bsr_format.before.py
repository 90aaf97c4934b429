@T.prim_func
def bsr(
    a: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    block_size: T.int32,
) -> None:
    T.func_attr({"sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz, block_size, block_size), "float32")
    JO_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    JO_indices = T.match_buffer(indices, (nnz,), "int32")
    pass
