# The single-script form of a format rewrite rule: the rule lives in func_attr.
# (The design document's version lacks a comma after "iterator_map"; Python
# requires one, and so do we.)
@T.prim_func
def bsr(
    a: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    block_size: T.var("int32")
) -> None:
    IO = T.sp.dense_fixed(m)
    JO = T.sp.compressed_varied(IO, (n, nnz), (indptr, indices), "int32")
    II = T.sp.dense_fixed(block_size)
    JI = T.sp.dense_fixed(block_size)
    A = T.sp.match_buffer(a, (IO, JO, II, JI), "float32")
    T.func_attr({
        "buffer_to_rewrite": "A",
        "iterator_map": {"I": ["IO", "II"], "J": ["JO", "JI"]},
        "idx_map": (lambda i, j: i // block_size, j // block_size, i % block_size, j % block_size),
        "inv_idx_map": (lambda io, jo, ii, ji: io * block_size + ii, jo * block_size + ji)
    })
    pass
