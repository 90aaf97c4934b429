# Elementwise op on 2-D ragged tensors sharing one structure:
# C[i, j] = A[i, j] * B[i, j] + s[i] - T.exp(A[i, j]) (s indexed by the row).
@T.prim_func
def ragged_elementwise(
    a: T.handle,
    b: T.handle,
    s: T.handle,
    c: T.handle,
    indptr: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.dense_varied(I, (n, nnz), indptr, "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (I, J), "float32")
    S = T.sp.match_buffer(s, (I,), "float32")
    C = T.sp.match_buffer(c, (I, J), "float32")
    with T.sp.iteration([I, J], "SS", "ewise") as [i, j]:
        C[i, j] = A[i, j] * B[i, j] + S[i] - T.exp(A[i, j])
