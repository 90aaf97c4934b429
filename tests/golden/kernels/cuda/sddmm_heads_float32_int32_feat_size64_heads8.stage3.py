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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64, "heads": 8}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 8, 64), "float32")
    Y = T.match_buffer(y, (n, 8, 64), "float32")
    O = T.match_buffer(out, (nnz, 8), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for ij_0 in T.thread_binding((nnz + 3) // 4, thread="blockIdx.x"):
        for ij_1 in T.thread_binding(4, thread="threadIdx.y"):
            if ij_0 * 4 + ij_1 < nnz:
                i_flat: T.int32 = T.sp.lower_bound(indptr, 0, m + 1, ij_0 * 4 + ij_1 + 1) - 1
                i: T.int32 = i_flat
                j: T.int32 = ij_0 * 4 + ij_1 - J_indptr[i]
                v8: T.int32 = J_indices[J_indptr[i] + j]
                v9: T.int32 = J_indptr[i] + j
                for h in T.thread_binding(8, thread="blockIdx.y"):
                    O_local = T.alloc_buffer((1,), "float32", scope="local")
                    with T.block("sddmm_heads_init"):
                        O_local[0] = T.float32(0.0)
                    for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                        for k_0 in T.serial(1):
                            Y_local = T.alloc_buffer((2,), "float32", scope="local")
                            v3: T.int32 = k_0 * 64 + k_1 * 2
                            for ax0_o in T.unroll(1):
                                for ax0_i in T.vectorized(2):
                                    Y_local[ax0_o * 2 + ax0_i] = Y[v8, h, v3 + (ax0_o * 2 + ax0_i)]
                            X_local = T.alloc_buffer((2,), "float32", scope="local")
                            v5: T.int32 = k_0 * 64 + k_1 * 2
                            for ax0_o in T.unroll(1):
                                for ax0_i in T.vectorized(2):
                                    X_local[ax0_o * 2 + ax0_i] = X[i, h, v5 + (ax0_o * 2 + ax0_i)]
                            for k_2 in T.unroll(2):
                                with T.block("sddmm_heads"):
                                    O_local[0] = O_local[0] + X_local[k_2] * Y_local[k_2]
                    O[v9, h] = O_local[0]
