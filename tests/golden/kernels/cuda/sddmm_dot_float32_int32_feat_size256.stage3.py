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
    for ij_0 in T.thread_binding((nnz + 3) // 4, thread="blockIdx.x"):
        for ij_1 in T.thread_binding(4, thread="threadIdx.y"):
            if ij_0 * 4 + ij_1 < nnz:
                i_flat: T.int32 = T.sp.lower_bound(indptr, 0, m + 1, ij_0 * 4 + ij_1 + 1) - 1
                i: T.int32 = i_flat
                j: T.int32 = ij_0 * 4 + ij_1 - J_indptr[i]
                O_local = T.alloc_buffer((1,), "float32", scope="local")
                with T.block("sddmm_init"):
                    O_local[0] = T.float32(0.0)
                v7: T.int32 = J_indices[J_indptr[i] + j]
                for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                    for k_0 in T.serial(2):
                        Y_local = T.alloc_buffer((4,), "float32", scope="local")
                        v3: T.int32 = k_0 * 128 + k_1 * 4
                        for ax0_o in T.unroll(1):
                            for ax0_i in T.vectorized(4):
                                Y_local[ax0_o * 4 + ax0_i] = Y[v7, v3 + (ax0_o * 4 + ax0_i)]
                        X_local = T.alloc_buffer((4,), "float32", scope="local")
                        v5: T.int32 = k_0 * 128 + k_1 * 4
                        for ax0_o in T.unroll(1):
                            for ax0_i in T.vectorized(4):
                                X_local[ax0_o * 4 + ax0_i] = X[i, v5 + (ax0_o * 4 + ax0_i)]
                        for k_2 in T.unroll(4):
                            with T.block("sddmm"):
                                O_local[0] = O_local[0] + X_local[k_2] * Y_local[k_2]
                O[J_indptr[i] + j] = O_local[0]
