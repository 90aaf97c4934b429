@T.prim_func
def csrmm(
    b: T.handle,
    c: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    a_ell: T.handle,
    row_map_ell: T.handle,
    indices_ell: T.handle,
    rows_ell: T.int32,
    width_ell: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "composable": 1, "specialized": {"feat_size": 64, "width_ell": 4}, "sparse_tir_level": 0})
    B = T.match_buffer(b, (n, 64), "float64")
    C = T.match_buffer(c, (m, 64), "float64")
    A_ell = T.match_buffer(a_ell, (rows_ell * 4,), "float64")
    I_ell_indices = T.match_buffer(row_map_ell, (rows_ell,), "int64")
    J_ell_indices = T.match_buffer(indices_ell, (rows_ell * 4,), "int64")
    T.assume_buffer_domain(I_ell_indices, [0, m - 1])
    T.assume_buffer_domain(J_ell_indices, [0, n - 1])
    for o_ell in T.parallel(rows_ell):
        for i_ell in T.serial(T.int64(1)):
            C_local = T.alloc_buffer((64,), "float64", scope="local")
            for ax0_o in T.unroll(8):
                for ax0_i in T.vectorized(8):
                    C_local[ax0_o * 8 + ax0_i] = T.float64(0.0)
            v4: T.int64 = (T.Cast("int64", o_ell) + i_ell) * T.int64(4)
            for j_ell in T.unroll(T.int64(4)):
                if (T.Cast("int64", o_ell) + i_ell) * T.int64(4) + (j_ell + T.int64(32)) < T.Cast("int64", rows_ell * 4):
                    T.prefetch(B[J_ell_indices[(T.Cast("int64", o_ell) + i_ell) * T.int64(4) + (j_ell + T.int64(32))], 0], 64)
                v2: T.int64 = v4 + j_ell
                v3: T.int64 = J_ell_indices[v2]
                for k_0 in T.unroll(8):
                    for k_1 in T.vectorized(8):
                        with T.block("csrmm_ell"):
                            C_local[k_0 * 8 + k_1] = C_local[k_0 * 8 + k_1] + A_ell[v2] * B[v3, k_0 * 8 + k_1]
            v5: T.int64 = I_ell_indices[T.Cast("int64", o_ell) + i_ell]
            for ax0 in T.unroll(64):
                T.atomic_add(C[v5, ax0], C_local[ax0])
