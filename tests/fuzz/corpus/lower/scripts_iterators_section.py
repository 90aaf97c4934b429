# The iterator examples of the design's "Sparse Iterators" section, together.
@T.prim_func
def iterators(
    indices_1: T.handle,
    indptr_2: T.handle,
    indptr_3: T.handle,
    indices_3: T.handle,
    a: T.handle,
    b: T.handle,
    m: T.int32,
    n: T.int32,
    n1: T.int32,
    c: T.int32,
    nnz: T.int32,
) -> None:
    I = T.sp.dense_fixed(m)
    # J1 is a compressed fixed iterator, whose dependent iterator is I
    J1 = T.sp.compressed_fixed(I, (n, c), indices_1, idtype="int32")
    # J2 is a dense varied iterator, whose dependent iterator is I
    J2 = T.sp.dense_varied(I, n, indptr_2, idtype="int32")
    # J3 is a compressed varied iterator, whose dependent iterator is J1
    J3 = T.sp.compressed_varied(J1, (n1, nnz), (indptr_3, indices_3), idtype="int64")
    A = T.sp.match_buffer(a, (I, J1), dtype="float32", scope="global")
    B = T.sp.alloc_buffer((I, J2), dtype="float32", scope="shared")
    pass
