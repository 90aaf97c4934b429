# 2D Ragged Tensor
@T.prim_func
def ragged(a: T.handle, indptr: T.handle, m: T.int32, n: T.int32) -> None:
    I = T.sp.dense_fixed(m)
    J = T.sp.dense_varied(I, n, indptr, idtype="int32")
    A = T.sp.match_buffer(a, (I, J), dtype="float32")
    pass
