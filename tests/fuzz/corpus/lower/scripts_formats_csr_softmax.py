# Softmax over the stored entries of every CSR row (sparse attention):
# mx[i] = max_j A[i, j]; E[i, j] = exp(A[i, j] - mx[i]); sm[i] = sum_j E[i, j];
# out[i, j] = E[i, j] / sm[i]. Rows without entries produce nothing.
@T.prim_func
def csr_softmax(
    a: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    O = T.sp.match_buffer(out, (I, J), "float32")
    MX = T.sp.alloc_buffer((I,), "float32")
    SM = T.sp.alloc_buffer((I,), "float32")
    with T.sp.iteration([I, J], "SR", "row_max") as [i, j]:
        with T.init():
            MX[i] = T.float32(-3.0e38)
        MX[i] = T.max(MX[i], A[i, j])
    with T.sp.iteration([I, J], "SS", "row_exp") as [i, j]:
        O[i, j] = T.exp(A[i, j] - MX[i])
    with T.sp.iteration([I, J], "SR", "row_sum") as [i, j]:
        with T.init():
            SM[i] = 0.0
        SM[i] = SM[i] + O[i, j]
    with T.sp.iteration([I, J], "SS", "row_div") as [i, j]:
        O[i, j] = O[i, j] / SM[i]
