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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 16, "heads": 4}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz, 4), "bfloat16")
    B = T.match_buffer(b, (n, 4, 16), "bfloat16")
    C = T.match_buffer(c, (m, 4, 16), "bfloat16")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        C_local = T.alloc_buffer((4, 16), "bfloat16", scope="local")
        for h_init in T.serial(4):
            for k_init in T.serial(16):
                with T.block("csrmm_heads_init"):
                    C_local[h_init, k_init] = T.bfloat16(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + T.int64(32)) < T.Cast("int64", nnz):
                T.prefetch(B[J_indices[J_indptr[i] + (j + T.int64(32))], 0, 0], 64)
            v4: T.int64 = J_indptr[i] + j
            v5: T.int64 = J_indices[v4]
            for h in T.unroll(4):
                for k_0 in T.unroll(1):
                    for k_1 in T.vectorized(16):
                        with T.block("csrmm_heads"):
                            C_local[h, k_0 * 16 + k_1] = C_local[h, k_0 * 16 + k_1] + A[v4, h] * B[v5, h, k_0 * 16 + k_1]
        for ax0 in T.unroll(4):
            for ax1_o in T.unroll(1):
                for ax1_i in T.vectorized(16):
                    C[i, ax0, ax1_o * 16 + ax1_i] = C_local[ax0, ax1_o * 16 + ax1_i]
