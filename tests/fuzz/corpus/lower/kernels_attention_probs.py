@T.prim_func
def attention_probs(
    q: T.handle,
    k: T.handle,
    probs: T.handle,
    row_max: T.handle,
    row_sum: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    head_dim: T.int32,
) -> None:
    # The attention probabilities of one head (q already scaled), recomputed by
    # the backward pass: P[i, j] = softmax_j(q_i . k_j) over the allowed j of
    # row i. row_max and row_sum are workspaces.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    D = T.sp.dense_fixed(head_dim)
    Q = T.sp.match_buffer(q, (I, D), "float32")
    K = T.sp.match_buffer(k, (J_detach, D), "float32")
    P = T.sp.match_buffer(probs, (I, J), "float32")
    MX = T.sp.match_buffer(row_max, (I,), "float32")
    SM = T.sp.match_buffer(row_sum, (I,), "float32")
    with T.sp.iteration([I, J, D], "SSR", "scores") as [i, j, d]:
        with T.init():
            P[i, j] = 0.0
        P[i, j] = P[i, j] + Q[i, d] * K[j, d]
    with T.sp.iteration([I, J], "SR", "row_max") as [i, j]:
        with T.init():
            MX[i] = -T.inf
        MX[i] = T.max(MX[i], P[i, j])
    with T.sp.iteration([I, J], "SS", "row_exp") as [i, j]:
        P[i, j] = T.exp(P[i, j] - MX[i])
    with T.sp.iteration([I, J], "SR", "row_sum") as [i, j]:
        with T.init():
            SM[i] = 0.0
        SM[i] = SM[i] + P[i, j]
    with T.sp.iteration([I, J], "SS", "row_div") as [i, j]:
        P[i, j] = P[i, j] / SM[i]
