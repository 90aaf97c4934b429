@T.prim_func
def edge_softmax(
    scores: T.handle,
    probs: T.handle,
    row_max: T.handle,
    row_sum: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
    heads: T.int32,
) -> None:
    # The softmax of per-edge scores over each row's non-zeros, every head at
    # once: P[i, j, h] = exp(S[i, j, h] - max_j S[i, :, h]) / sum_j exp(...).
    # Subtracting the row's maximum keeps exp in range. row_max and row_sum
    # are workspaces.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    H = T.sp.dense_fixed(heads)
    S = T.sp.match_buffer(scores, (I, J, H), "float32")
    P = T.sp.match_buffer(probs, (I, J, H), "float32")
    MX = T.sp.match_buffer(row_max, (I, H), "float32")
    SM = T.sp.match_buffer(row_sum, (I, H), "float32")
    with T.sp.iteration([I, J, H], "SRS", "row_max") as [i, j, h]:
        with T.init():
            MX[i, h] = -T.inf
        MX[i, h] = T.max(MX[i, h], S[i, j, h])
    with T.sp.iteration([I, J, H], "SSS", "row_exp") as [i, j, h]:
        P[i, j, h] = T.exp(S[i, j, h] - MX[i, h])
    with T.sp.iteration([I, J, H], "SRS", "row_sum") as [i, j, h]:
        with T.init():
            SM[i, h] = 0.0
        SM[i, h] = SM[i, h] + P[i, j, h]
    with T.sp.iteration([I, J, H], "SSS", "row_div") as [i, j, h]:
        P[i, j, h] = P[i, j, h] / SM[i, h]
