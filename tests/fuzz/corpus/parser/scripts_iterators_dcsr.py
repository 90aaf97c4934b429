# Doubly Compressed Sparse Row (DCSR)
@T.prim_func
def dcsr(
    a: T.handle,
    indptr_i: T.handle,
    indices_i: T.handle,
    indptr_j: T.handle,
    indices_j: T.handle,
    m: T.int32,
    n: T.int32,
    nnz1: T.int32,
    nnz2: T.int32,
) -> None:
    O = T.sp.dense_fixed(1) # A placeholder iterator as parent of iterator I.
    I = T.sp.compressed_varied(O, (m, nnz1), (indptr_i, indices_i), idtype="int32")
    J = T.sp.compressed_varied(I, (n, nnz2), (indptr_j, indices_j), idtype="int32")
    A = T.sp.match_buffer(a, (O, I, J), dtype="float32")
    pass
