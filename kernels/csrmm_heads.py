@T.prim_func
def csrmm_heads(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    heads: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    # Multi-head SpMM: C[i, h, :] = sum over the non-zeros (i, j) of A[i, j, h] * B[j, h, :],
    # every head in one pass over the structure (a GAT layer's aggregation).
    # A non-zero's heads are consecutive, so a gathered row B[j] is read whole.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    H = T.sp.dense_fixed(heads)
    K = T.sp.dense_fixed(feat_size)
    A = T.sp.match_buffer(a, (I, J, H), "float32")
    B = T.sp.match_buffer(b, (J_detach, H, K), "float32")
    C = T.sp.match_buffer(c, (I, H, K), "float32")
    with T.sp.iteration([I, J, H, K], "SRSS", "csrmm_heads") as [i, j, h, k]:
        with T.init():
            C[i, h, k] = 0.0
        C[i, h, k] = C[i, h, k] + A[i, j, h] * B[j, h, k]
