# Block Compressed Sparse Row (BCSR)
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
    IO = T.sp.dense_fixed(mb)
    JO = T.sp.compressed_varied(IO, (nb, nnzb), (indptr, indices), idtype="int32")
    II = T.sp.dense_fixed(block_size)
    JI = T.sp.dense_fixed(block_size)
    A = T.sp.match_buffer(a, (IO, JO, II, JI), dtype="float32")
    pass
