@T.prim_func
def bsr(
    a: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    block_size: T.int32,
) -> None:
    T.func_attr({"buffer_to_rewrite": "A", "iterator_map": {"I": ["IO", "II"], "J": ["JO", "JI"]}, "idx_map": (lambda i, j: (i // block_size, j // block_size, i % block_size, j % block_size)), "inv_idx_map": (lambda io, jo, ii, ji: (io * block_size + ii, jo * block_size + ji)), "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz, block_size, block_size), "float32")
    JO_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    JO_indices = T.match_buffer(indices, (nnz,), "int32")
    pass
