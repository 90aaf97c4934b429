@T.prim_func
def csrmm(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 256}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, 256), "float32")
    C = T.match_buffer(c, (m, 256), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for k_init in T.serial(256):
            with T.block("csrmm_init"):
                C[i, k_init] = T.float32(0.0)
        v5: T.int32 = J_indptr[i + 1] - J_indptr[i]
        v6: T.int32 = J_indptr[i]
        for k_0 in T.serial(4):
            C_local = T.alloc_buffer((64,), "float32", scope="local")
            for ax0_o in T.unroll(8):
                for ax0_i in T.vectorized(8):
                    C_local[ax0_o * 8 + ax0_i] = C[i, k_0 * 64 + (ax0_o * 8 + ax0_i)]
            for j in T.serial(v5):
                if J_indptr[i] + (j + 32) < nnz:
                    T.prefetch(B[J_indices[J_indptr[i] + (j + 32)], k_0 * 8 * 8], 64)
                v3: T.int32 = v6 + j
                v4: T.int32 = J_indices[v3]
                for k_1 in T.unroll(8):
                    v2: T.int32 = (k_0 * 8 + k_1) * 8
                    for k_2 in T.vectorized(8):
                        with T.block("csrmm"):
                            C_local[k_1 * 8 + k_2] = C_local[k_1 * 8 + k_2] + A[v3] * B[v4, v2 + k_2]
            for ax0_o in T.unroll(8):
                for ax0_i in T.vectorized(8):
                    C[i, k_0 * 64 + (ax0_o * 8 + ax0_i)] = C_local[ax0_o * 8 + ax0_i]
