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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64, "lanes": 8}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 64), "float32")
    Y = T.match_buffer(y, (n, 64), "float32")
    O = T.match_buffer(out, (nnz,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for g in T.serial((J_indptr[i + 1] - J_indptr[i]) // 4):
            for q_ahead in T.unroll(4):
                if J_indptr[i] + (g + 8) * 4 + q_ahead < nnz:
                    T.prefetch(Y[J_indices[J_indptr[i] + (g + 8) * 4 + q_ahead], 0], 64)
            first: T.int32 = J_indptr[i] + g * 4
            P = T.alloc_buffer((4, 8), "float32", scope="local")
            for q in T.unroll(4):
                for l in T.vectorized(8):
                    P[q, l] = T.float32(0.0)
            for kg in T.unroll(8):
                for q in T.unroll(4):
                    v0: T.int32 = J_indices[first + q]
                    for l in T.vectorized(8):
                        P[q, l] = P[q, l] + X[i, kg * 8 + l] * Y[v0, kg * 8 + l]
            for q in T.vectorized(4):
                O[first + q] = T.sp.horizontal_sum(P[q, 0], 8)
        for t in T.serial((J_indptr[i + 1] - J_indptr[i]) % 4):
            if J_indptr[i] + (J_indptr[i + 1] - J_indptr[i]) // 4 * 4 + (t + 32) < nnz:
                T.prefetch(Y[J_indices[J_indptr[i] + (J_indptr[i + 1] - J_indptr[i]) // 4 * 4 + (t + 32)], 0], 64)
            last: T.int32 = J_indptr[i] + (J_indptr[i + 1] - J_indptr[i]) // 4 * 4 + t
            P1 = T.alloc_buffer((8,), "float32", scope="local")
            for l in T.vectorized(8):
                P1[l] = T.float32(0.0)
            v2: T.int32 = J_indices[last]
            for kt in T.unroll(8):
                for l in T.vectorized(8):
                    P1[l] = P1[l] + X[i, kt * 8 + l] * Y[v2, kt * 8 + l]
            O[last] = T.sp.horizontal_sum(P1[0], 8)
