# The elementwise product of two CSR matrices with different patterns, on A's
# pattern: walking A's non-zeros, B[i, j] locates column j in row i of B's own
# structure by binary search (0 where B does not store it).
@T.prim_func
def csr_intersect(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    a_indptr: T.handle,
    a_indices: T.handle,
    b_indptr: T.handle,
    b_indices: T.handle,
    m: T.int32,
    n: T.int32,
    a_nnz: T.int32,
    b_nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    JA = T.sp.compressed_varied(I, (n, a_nnz), (a_indptr, a_indices), "int32")
    JB = T.sp.compressed_varied(I, (n, b_nnz), (b_indptr, b_indices), "int32")
    A = T.sp.match_buffer(a, (I, JA), "float32")
    B = T.sp.match_buffer(b, (I, JB), "float32")
    C = T.sp.match_buffer(c, (I, JA), "float32")
    with T.sp.iteration([I, JA], "SS", "intersect") as [i, j]:
        C[i, j] = A[i, j] * B[i, j]
