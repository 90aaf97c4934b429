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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 5, "heads": 3}, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz, 3), "float32")
    B = T.match_buffer(b, (n, 3, 5), "float32")
    C = T.match_buffer(c, (m, 3, 5), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        C_local = T.alloc_buffer((3, 5), "float32", scope="local")
        for h_init in T.serial(3):
            for k_init in T.serial(5):
                with T.block("csrmm_heads_init"):
                    C_local[h_init, k_init] = T.float32(0.0)
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + 32) < nnz:
                T.prefetch(B[J_indices[J_indptr[i] + (j + 32)], 0, 0], 15)
            v2: T.int32 = J_indptr[i] + j
            v3: T.int32 = J_indices[v2]
            for h in T.unroll(3):
                for k in T.serial(5):
                    with T.block("csrmm_heads"):
                        C_local[h, k] = C_local[h, k] + A[v2, h] * B[v3, h, k]
        for ax0 in T.unroll(3):
            for ax1 in T.unroll(5):
                C[i, ax0, ax1] = C_local[ax0, ax1]
