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
    T.func_attr({"sparse_tir_level": 0})
    A = T.match_buffer(a, (m * c,), "float32")
    J2_indptr = T.match_buffer(indptr_2, (m + 1,), "int32")
    B = T.alloc_buffer((J2_indptr[m],), "float32", scope="shared")
    J1_indices = T.match_buffer(indices_1, (m * c,), "int32")
    J3_indptr = T.match_buffer(indptr_3, (m * c + 1,), "int64")
    J3_indices = T.match_buffer(indices_3, (nnz,), "int64")
    pass
