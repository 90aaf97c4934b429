# A CSR matrix holding part of another CSR matrix's non-zeros (a column part
# of a hyb decomposition, or what its ELL buckets leave): same rows, same
# columns, its own structure arrays.
@T.prim_func
def csr_part(
    a: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    T.func_attr({
        "buffer_to_rewrite": "A",
        "iterator_map": {"I": ["I"], "J": ["J"]},
        "idx_map": (lambda i, j: (i, j)),
        "inv_idx_map": (lambda i, j: (i, j)),
    })
    pass
