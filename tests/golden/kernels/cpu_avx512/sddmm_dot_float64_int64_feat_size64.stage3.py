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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 64), "float64")
    Y = T.match_buffer(y, (n, 64), "float64")
    O = T.match_buffer(out, (nnz,), "float64")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + T.int64(32)) < T.Cast("int64", nnz):
                T.prefetch(Y[J_indices[J_indptr[i] + (j + T.int64(32))], 0], 64)
            O_local = T.alloc_buffer((1,), "float64", scope="local")
            with T.block("sddmm_init"):
                O_local[0] = T.float64(0.0)
            O_local_rf = T.alloc_buffer((8,), "float64", scope="local")
            for k_1_init in T.serial(8):
                O_local_rf[k_1_init] = T.float64(0.0)
            v1: T.int64 = J_indices[J_indptr[i] + j]
            for k_0 in T.unroll(8):
                for k_1 in T.vectorized(8):
                    with T.block("sddmm"):
                        O_local_rf[k_1] = O_local_rf[k_1] + X[i, k_0 * 8 + k_1] * Y[v1, k_0 * 8 + k_1]
            for k_1_tree in T.vectorized(4):
                O_local_rf[k_1_tree] = O_local_rf[k_1_tree] + O_local_rf[k_1_tree + 4]
            for k_1_tree_1 in T.vectorized(2):
                O_local_rf[k_1_tree_1] = O_local_rf[k_1_tree_1] + O_local_rf[k_1_tree_1 + 2]
            for k_1_tree_2 in T.serial(1):
                O_local_rf[k_1_tree_2] = O_local_rf[k_1_tree_2] + O_local_rf[k_1_tree_2 + 1]
            O_local[0] = O_local[0] + O_local_rf[0]
            O[J_indptr[i] + j] = O_local[0]
