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
    T.func_attr({"sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz2,), "float32")
    I_indptr = T.match_buffer(indptr_i, (2,), "int32")
    I_indices = T.match_buffer(indices_i, (nnz1,), "int32")
    J_indptr = T.match_buffer(indptr_j, (nnz1 + 1,), "int32")
    J_indices = T.match_buffer(indices_j, (nnz2,), "int32")
    pass
