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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 10000}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, 10000), "float32")
    C = T.match_buffer(c, (m, 10000), "float32")
    L = T.match_buffer(lengths, (m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(4, thread="threadIdx.y"):
            if i_0 * 4 + i_1 < m:
                for k_init_0 in T.thread_binding(313, thread="blockIdx.y"):
                    for k_init_1 in T.thread_binding(32, thread="threadIdx.x"):
                        if k_init_0 * 32 + k_init_1 < 10000:
                            with T.block("csrmm_init"):
                                C[i_0 * 4 + i_1, k_init_0 * 32 + k_init_1] = T.float32(0.0)
                for k_0 in T.thread_binding(313, thread="blockIdx.y"):
                    for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                        if k_0 * 32 + k_1 < 10000:
                            C_local = T.alloc_buffer((1,), "float32", scope="local")
                            C_local[0] = C[i_0 * 4 + i_1, k_0 * 32 + k_1]
                            for j_0 in T.serial((J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1] + 3) // 4):
                                for j_1 in T.unroll(4):
                                    if j_0 * 4 + j_1 < J_indptr[i_0 * 4 + i_1 + 1] - J_indptr[i_0 * 4 + i_1]:
                                        with T.block("csrmm"):
                                            C_local[0] = C_local[0] + A[J_indptr[i_0 * 4 + i_1] + (j_0 * 4 + j_1)] * B[J_indices[J_indptr[i_0 * 4 + i_1] + (j_0 * 4 + j_1)], k_0 * 32 + k_1]
                            with T.block("row_div"):
                                C_local[0] = C_local[0] / L[i_0 * 4 + i_1]
                            C[i_0 * 4 + i_1, k_0 * 32 + k_1] = C_local[0]
