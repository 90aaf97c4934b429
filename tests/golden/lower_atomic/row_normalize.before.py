@T.prim_func
def row_normalize(
    a: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    O = T.sp.match_buffer(out, (I, J), "float32")
    S = T.sp.alloc_buffer((I,), "float32")
    with T.sp.iteration([I, J], "SR", "row_sum") as [i, j]:
        with T.init():
            S[i] = T.float32(0.0)
        S[i] = S[i] + A[i, j]
    with T.sp.iteration([I, J], "SS", "row_div") as [i, j]:
        O[i, j] = A[i, j] / S[i]
