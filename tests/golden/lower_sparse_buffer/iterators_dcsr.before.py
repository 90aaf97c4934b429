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
    T.func_attr({"sparse_tir_level": 1})
    O = T.sp.dense_fixed(1, "int32")
    I = T.sp.compressed_varied(O, (m, nnz1), (indptr_i, indices_i), "int32")
    J = T.sp.compressed_varied(I, (n, nnz2), (indptr_j, indices_j), "int32")
    I_dense = T.sp.dense_varied(O, (m, nnz1), indptr_i, "int32")
    J_dense = T.sp.dense_varied(I, (n, nnz2), indptr_j, "int32")
    A = T.sp.match_buffer(a, (O, I, J), "float32")
    I_indptr = T.sp.match_buffer(indptr_i, (O,), "int32", extra_storage=1)
    I_indices = T.sp.match_buffer(indices_i, (O, I_dense), "int32")
    J_indptr = T.sp.match_buffer(indptr_j, (O, I), "int32", extra_storage=1)
    J_indices = T.sp.match_buffer(indices_j, (O, I, J_dense), "int32")
    pass
