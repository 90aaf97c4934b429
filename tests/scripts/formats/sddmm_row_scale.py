# SDDMM whose output Y and input values X share the (I, J) structure, scaled
# by a vector indexed by the row: Y[i, j] = s[i] * X[i, j] * sum_k A[i, k] B[j, k].
@T.prim_func
def sddmm_row_scale(
    a: T.handle,
    b: T.handle,
    x: T.handle,
    s: T.handle,
    y: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    K = T.sp.dense_fixed(feat_size)
    A = T.sp.match_buffer(a, (I, K), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    X = T.sp.match_buffer(x, (I, J), "float32")
    S = T.sp.match_buffer(s, (I,), "float32")
    Y = T.sp.match_buffer(y, (I, J), "float32")
    with T.sp.iteration([I, J, K], "SSR", "sddmm") as [i, j, k]:
        with T.init():
            Y[i, j] = 0.0
        Y[i, j] = Y[i, j] + S[i] * A[i, k] * B[j, k] * X[i, j]
