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
    T.func_attr({"sparse_tir_level": 2})
    IO = T.sp.dense_fixed(mb, "int32")
    JO = T.sp.compressed_varied(IO, (nb, nnzb), (indptr, indices), "int32")
    II = T.sp.dense_fixed(block_size, "int32")
    JI = T.sp.dense_fixed(block_size, "int32")
    A = T.sp.match_buffer(a, (IO, JO, II, JI), "float32")
    pass
