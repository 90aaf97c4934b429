@T.prim_func
def sddmm_dot_groups(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
    lanes: T.int32,
) -> None:
    # sddmm_dot (out[i, j] = X[i, :] . Y[j, :] over a CSR pattern) on a cpu,
    # four non-zeros of a row at a time: each vector of X[i] loaded once
    # serves four dot products, so a multiply-add loads 1.25 vectors instead
    # of 2 (the one-at-a-time kernel is bound by those loads once Y is
    # cached). The four vectors of partial sums merge into the four outputs
    # in registers (horizontal_sum in a vectorized loop: a few shuffles,
    # where four separate folds would each end in scalar additions); a
    # row's last non-zeros (fewer than four) run one at a time. feat_size is
    # a multiple of lanes (a vector of the target, at most 16). A stage-III
    # script: it binds its own loops; the recipe parallelizes the rows.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, feat_size), "float32")
    Y = T.match_buffer(y, (n, feat_size), "float32")
    O = T.match_buffer(out, (nnz,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.serial(m):
        for g in T.serial((J_indptr[i + 1] - J_indptr[i]) // 4):
            first: T.int32 = J_indptr[i] + g * 4
            P = T.alloc_buffer((4, lanes), "float32", scope="local")
            for q in T.unroll(4):
                for l in T.vectorized(lanes):
                    P[q, l] = T.float32(0.0)
            for kg in T.serial(feat_size // lanes):
                for q in T.unroll(4):
                    for l in T.vectorized(lanes):
                        P[q, l] = P[q, l] + X[i, kg * lanes + l] * Y[J_indices[first + q], kg * lanes + l]
            for q in T.vectorized(4):
                O[first + q] = T.sp.horizontal_sum(P[q, 0], lanes)
        for t in T.serial((J_indptr[i + 1] - J_indptr[i]) % 4):
            last: T.int32 = J_indptr[i] + (J_indptr[i + 1] - J_indptr[i]) // 4 * 4 + t
            P1 = T.alloc_buffer((lanes,), "float32", scope="local")
            for l in T.vectorized(lanes):
                P1[l] = T.float32(0.0)
            for kt in T.serial(feat_size // lanes):
                for l in T.vectorized(lanes):
                    P1[l] = P1[l] + X[i, kt * lanes + l] * Y[J_indices[last], kt * lanes + l]
            O[last] = T.sp.horizontal_sum(P1[0], lanes)
