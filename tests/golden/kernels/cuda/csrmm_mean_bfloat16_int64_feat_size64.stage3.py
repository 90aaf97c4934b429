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
    for i_0 in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(4, thread="threadIdx.y"):
            if i_0 * 4 + i_1 < m:
                v1: T.int32 = i_0 * 4 + i_1
                for k_init_0 in T.thread_binding(2, thread="blockIdx.y"):
                    for k_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                        with T.block("csrmm_init"):
                            C[v1, k_init_0 * 32 + k_init_1] = T.bfloat16(0.0)
                v4: T.int32 = i_0 * 4 + i_1
                v5: T.int64 = (J_indptr[v4 + 1] - J_indptr[v4] + T.int64(3)) // T.int64(4)
                for k_0 in T.thread_binding(2, thread="blockIdx.y"):
                    for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                        C_local = T.alloc_buffer((1,), "bfloat16", scope="local")
                        C_local[0] = C[v4, k_0 * 32 + k_1]
                        for j_0 in T.serial(v5):
                            for j_1 in T.unroll(T.int64(4)):
                                if j_0 * T.int64(4) + j_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                    with T.block("csrmm"):
                                        C_local[0] = C_local[0] + A[J_indptr[i_0 * 4 + i_1] + (j_0 * T.int64(4) + j_1)] * B[J_indices[J_indptr[i_0 * 4 + i_1] + (j_0 * T.int64(4) + j_1)], k_0 * 32 + k_1]
                        with T.block("row_div"):
                            C_local[0] = T.Cast("bfloat16", T.Cast("float32", C_local[0]) / L[v4])
                        C[v4, k_0 * 32 + k_1] = C_local[0]
