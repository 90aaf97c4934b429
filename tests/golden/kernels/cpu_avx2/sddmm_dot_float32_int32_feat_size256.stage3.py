@T.prim_func
def sddmm_dot(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 256}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 256), "float32")
    Y = T.match_buffer(y, (n, 256), "float32")
    O = T.match_buffer(out, (nnz,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + 32) < nnz:
                T.prefetch(Y[J_indices[J_indptr[i] + (j + 32)], 0], 256)
            O_local = T.alloc_buffer((1,), "float32", scope="local")
            with T.block("sddmm_init"):
                O_local[0] = T.float32(0.0)
            O_local_rf = T.alloc_buffer((32,), "float32", scope="local")
            for k_1_init in T.serial(32):
                O_local_rf[k_1_init] = T.float32(0.0)
            v2: T.int32 = J_indices[J_indptr[i] + j]
            for k_0 in T.serial(8):
                for k_1_0 in T.unroll(4):
                    for k_1_1 in T.vectorized(8):
                        with T.block("sddmm"):
                            O_local_rf[k_1_0 * 8 + k_1_1] = O_local_rf[k_1_0 * 8 + k_1_1] + X[i, k_0 * 32 + (k_1_0 * 8 + k_1_1)] * Y[v2, k_0 * 32 + (k_1_0 * 8 + k_1_1)]
            for k_1_tree_0 in T.unroll(2):
                for k_1_tree_1_1 in T.vectorized(8):
                    O_local_rf[k_1_tree_0 * 8 + k_1_tree_1_1] = O_local_rf[k_1_tree_0 * 8 + k_1_tree_1_1] + O_local_rf[k_1_tree_0 * 8 + k_1_tree_1_1 + 16]
            for k_1_tree_1 in T.vectorized(8):
                O_local_rf[k_1_tree_1] = O_local_rf[k_1_tree_1] + O_local_rf[k_1_tree_1 + 8]
            for k_1_tree_2 in T.vectorized(4):
                O_local_rf[k_1_tree_2] = O_local_rf[k_1_tree_2] + O_local_rf[k_1_tree_2 + 4]
            for k_1_tree_3 in T.vectorized(2):
                O_local_rf[k_1_tree_3] = O_local_rf[k_1_tree_3] + O_local_rf[k_1_tree_3 + 2]
            for k_1_tree_4 in T.serial(1):
                O_local_rf[k_1_tree_4] = O_local_rf[k_1_tree_4] + O_local_rf[k_1_tree_4 + 1]
            O_local[0] = O_local[0] + O_local_rf[0]
            O[J_indptr[i] + j] = O_local[0]
