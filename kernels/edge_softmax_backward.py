@T.prim_func
def edge_softmax_backward(
    probs: T.handle,
    grad_probs: T.handle,
    grad_scores: T.handle,
    row_dot: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    heads: T.int32,
) -> None:
    # The gradient of edge_softmax: with D[i, h] = sum_j P[i, j, h] dP[i, j, h],
    # dS[i, j, h] = P[i, j, h] * (dP[i, j, h] - D[i, h]). row_dot is a workspace.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    H = T.sp.dense_fixed(heads)
    P = T.sp.match_buffer(probs, (I, J, H), "float32")
    DP = T.sp.match_buffer(grad_probs, (I, J, H), "float32")
    DS = T.sp.match_buffer(grad_scores, (I, J, H), "float32")
    RD = T.sp.match_buffer(row_dot, (I, H), "float32")
    with T.sp.iteration([I, J, H], "SRS", "row_dot") as [i, j, h]:
        with T.init():
            RD[i, h] = 0.0
        RD[i, h] = RD[i, h] + P[i, j, h] * DP[i, j, h]
    with T.sp.iteration([I, J, H], "SSS", "grad_scores") as [i, j, h]:
        DS[i, j, h] = P[i, j, h] * (DP[i, j, h] - RD[i, h])
