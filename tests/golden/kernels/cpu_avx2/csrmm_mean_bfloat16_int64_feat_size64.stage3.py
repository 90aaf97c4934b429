@T.prim_func
def csrmm_mean(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    lengths: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "bfloat16")
    B = T.match_buffer(b, (n, 64), "bfloat16")
    C = T.match_buffer(c, (m, 64), "bfloat16")
    L = T.match_buffer(lengths, (m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        C_local = T.alloc_buffer((64,), "bfloat16", scope="local")
        for k_init in T.serial(64):
            with T.block("csrmm_init"):
                C_local[k_init] = T.bfloat16(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + T.int64(32)) < T.Cast("int64", nnz):
                T.prefetch(B[J_indices[J_indptr[i] + (j + T.int64(32))], 0], 64)
            v2: T.int64 = J_indptr[i] + j
            v3: T.int64 = J_indices[v2]
            for k_0 in T.unroll(8):
                for k_1 in T.vectorized(8):
                    with T.block("csrmm"):
                        C_local[k_0 * 8 + k_1] = C_local[k_0 * 8 + k_1] + A[v2] * B[v3, k_0 * 8 + k_1]
        for k_1_0 in T.unroll(8):
            for k_1_1 in T.vectorized(8):
                with T.block("row_div"):
                    C_local[k_1_0 * 8 + k_1_1] = T.Cast("bfloat16", T.Cast("float32", C_local[k_1_0 * 8 + k_1_1]) / L[i])
        for ax0_o in T.unroll(8):
            for ax0_i in T.vectorized(8):
                C[i, ax0_o * 8 + ax0_i] = C_local[ax0_o * 8 + ax0_i]
