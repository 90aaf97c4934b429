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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 1, "heads": 8}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz, 8), "float32")
    B = T.match_buffer(b, (n, 8, 1), "float32")
    C = T.match_buffer(c, (m, 8, 1), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i_0 in T.thread_binding((m + 127) // 128, thread="blockIdx.x"):
        for i_1 in T.thread_binding(128, thread="threadIdx.y"):
            if i_0 * 128 + i_1 < m:
                v2: T.int32 = i_0 * 128 + i_1
                for h_init in T.thread_binding(8, thread="blockIdx.z"):
                    for k_init_0 in T.thread_binding(1, thread="blockIdx.y"):
                        for k_init_1 in T.thread_binding(1, thread="threadIdx.x"):
                            with T.block("csrmm_heads_init"):
                                C[v2, h_init, k_init_0 + k_init_1] = T.float32(0.0)
                v7: T.int32 = i_0 * 128 + i_1
                v8: T.int32 = (J_indptr[v7 + 1] - J_indptr[v7] + 3) // 4
                for h in T.thread_binding(8, thread="blockIdx.z"):
                    for k_0 in T.thread_binding(1, thread="blockIdx.y"):
                        for k_1 in T.thread_binding(1, thread="threadIdx.x"):
                            C_local = T.alloc_buffer((1,), "float32", scope="local")
                            C_local[0] = C[v7, h, k_0 + k_1]
                            for j_0 in T.serial(v8):
                                for j_1 in T.unroll(4):
                                    if j_0 * 4 + j_1 < J_indptr[i_0 * 128 + i_1 + 1] - J_indptr[i_0 * 128 + i_1]:
                                        with T.block("csrmm_heads"):
                                            C_local[0] = C_local[0] + A[J_indptr[i_0 * 128 + i_1] + (j_0 * 4 + j_1), h] * B[J_indices[J_indptr[i_0 * 128 + i_1] + (j_0 * 4 + j_1)], h, k_0 + k_1]
                            C[v7, h, k_0 + k_1] = C_local[0]
