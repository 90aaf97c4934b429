# bsr format description
def bsr(block_size: int):
    @T.prim_func
    def func(
        a: T.handle,
        indptr: T.handle,
        indices: T.handle,
        m: T.int32,
        n: T.int32,
        nnz: T.int32
    ) -> None:
        IO = T.sp.dense_fixed(m)
        JO = T.sp.compressed_varied(IO, (n, nnz), (indptr, indices), "int32")
        II = T.sp.dense_fixed(block_size)
        JI = T.sp.dense_fixed(block_size)
        A = T.sp.match_buffer(a, (IO, JO, II, JI), "float32")
        pass  # placeholder, indicates it's the end of the script.
    return func
