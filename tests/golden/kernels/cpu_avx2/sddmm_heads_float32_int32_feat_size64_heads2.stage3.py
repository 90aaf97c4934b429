@T.prim_func
def sddmm_heads(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    heads: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64, "heads": 2}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 2, 64), "float32")
    Y = T.match_buffer(y, (n, 2, 64), "float32")
    O = T.match_buffer(out, (nnz, 2), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for i in T.parallel(m):
        for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
            if J_indptr[i] + (j + 32) < nnz:
                T.prefetch(Y[J_indices[J_indptr[i] + (j + 32)], 0, 0], 128)
            v2: T.int32 = J_indices[J_indptr[i] + j]
            v3: T.int32 = J_indptr[i] + j
            for h in T.unroll(2):
                O_local = T.alloc_buffer((1,), "float32", scope="local")
                with T.block("sddmm_heads_init"):
                    O_local[0] = T.float32(0.0)
                O_local_rf = T.alloc_buffer((8,), "float32", scope="local")
                for k_1_init in T.serial(8):
                    O_local_rf[k_1_init] = T.float32(0.0)
                for k_0 in T.unroll(8):
                    for k_1 in T.vectorized(8):
                        with T.block("sddmm_heads"):
                            O_local_rf[k_1] = O_local_rf[k_1] + X[i, h, k_0 * 8 + k_1] * Y[v2, h, k_0 * 8 + k_1]
                for k_1_tree in T.vectorized(4):
                    O_local_rf[k_1_tree] = O_local_rf[k_1_tree] + O_local_rf[k_1_tree + 4]
                for k_1_tree_1 in T.vectorized(2):
                    O_local_rf[k_1_tree_1] = O_local_rf[k_1_tree_1] + O_local_rf[k_1_tree_1 + 2]
                for k_1_tree_2 in T.serial(1):
                    O_local_rf[k_1_tree_2] = O_local_rf[k_1_tree_2] + O_local_rf[k_1_tree_2 + 1]
                O_local[0] = O_local[0] + O_local_rf[0]
                O[v3, h] = O_local[0]
