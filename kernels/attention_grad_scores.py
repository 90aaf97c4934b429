@T.prim_func
def attention_grad_scores(
    probs: T.handle,
    grad_probs: T.handle,
    out: T.handle,
    grad_out: T.handle,
    grad_scores: T.handle,
    row_dot: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    value_dim: T.int32,
) -> None:
    # The softmax backward of sparse attention, one head: with D_i = dO_i . O_i,
    # dS[i, j] = P[i, j] * (dP[i, j] - D_i). row_dot is a workspace.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    DV = T.sp.dense_fixed(value_dim)
    P = T.sp.match_buffer(probs, (I, J), "float32")
    DP = T.sp.match_buffer(grad_probs, (I, J), "float32")
    O = T.sp.match_buffer(out, (I, DV), "float32")
    DO = T.sp.match_buffer(grad_out, (I, DV), "float32")
    DS = T.sp.match_buffer(grad_scores, (I, J), "float32")
    RD = T.sp.match_buffer(row_dot, (I,), "float32")
    with T.sp.iteration([I, DV], "SR", "row_dot") as [i, dv]:
        with T.init():
            RD[i] = 0.0
        RD[i] = RD[i] + DO[i, dv] * O[i, dv]
    with T.sp.iteration([I, J], "SS", "grad_scores") as [i, j]:
        DS[i, j] = P[i, j] * (DP[i, j] - RD[i])
