# ELLPack format, with number of columns per row 4
@T.prim_func
def ell(a: T.handle, indices: T.handle, m: T.int32, n: T.int32) -> None:
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_fixed(I, (n, 4), indices, idtype="int32")
    A = T.sp.match_buffer(a, (I, J), dtype="float32")
    pass
