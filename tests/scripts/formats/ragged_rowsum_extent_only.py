# Row sums of a 2-D ragged tensor whose varied level gives only its maximum
# extent (no nnz): the value buffer's length comes from indptr[m].
@T.prim_func
def ragged_rowsum_extent_only(
    a: T.handle,
    y: T.handle,
    indptr: T.handle,
    m: T.int32,
    n: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.dense_varied(I, n, indptr, "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    Y = T.sp.match_buffer(y, (I,), "float32")
    with T.sp.iteration([I, J], "SR", "rowsum") as [i, j]:
        with T.init():
            Y[i] = 0.0
        Y[i] = Y[i] + A[i, j]
