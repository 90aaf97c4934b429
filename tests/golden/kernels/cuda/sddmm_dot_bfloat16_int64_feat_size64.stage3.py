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
    X = T.match_buffer(x, (m, 64), "bfloat16")
    Y = T.match_buffer(y, (n, 64), "bfloat16")
    O = T.match_buffer(out, (nnz,), "bfloat16")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int64")
    J_indices = T.match_buffer(indices, (nnz,), "int64")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for ij_0 in T.thread_binding((T.Cast("int64", nnz) + T.int64(3)) // T.int64(4), thread="blockIdx.x"):
        for ij_1 in T.thread_binding(T.int64(4), thread="threadIdx.y"):
            if ij_0 * T.int64(4) + ij_1 < T.Cast("int64", nnz):
                i_flat: T.int64 = T.sp.lower_bound(indptr, T.int64(0), T.Cast("int64", m) + T.int64(1), ij_0 * T.int64(4) + ij_1 + T.int64(1)) - T.int64(1)
                i: T.int32 = T.Cast("int32", i_flat)
                j: T.int64 = ij_0 * T.int64(4) + ij_1 - J_indptr[i]
                O_local = T.alloc_buffer((1,), "bfloat16", scope="local")
                with T.block("sddmm_init"):
                    O_local[0] = T.bfloat16(0.0)
                v7: T.int64 = J_indices[J_indptr[i] + j]
                for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                    for k_0 in T.serial(1):
                        Y_local = T.alloc_buffer((2,), "bfloat16", scope="local")
                        v3: T.int32 = k_0 * 64 + k_1 * 2
                        for ax0_o in T.unroll(1):
                            for ax0_i in T.vectorized(2):
                                Y_local[ax0_o * 2 + ax0_i] = Y[v7, v3 + (ax0_o * 2 + ax0_i)]
                        X_local = T.alloc_buffer((2,), "bfloat16", scope="local")
                        v5: T.int32 = k_0 * 64 + k_1 * 2
                        for ax0_o in T.unroll(1):
                            for ax0_i in T.vectorized(2):
                                X_local[ax0_o * 2 + ax0_i] = X[i, v5 + (ax0_o * 2 + ax0_i)]
                        for k_2 in T.unroll(2):
                            with T.block("sddmm"):
                                O_local[0] = O_local[0] + X_local[k_2] * Y_local[k_2]
                O[J_indptr[i] + j] = O_local[0]
