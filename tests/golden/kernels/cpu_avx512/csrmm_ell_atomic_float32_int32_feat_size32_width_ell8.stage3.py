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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "composable": 1, "specialized": {"feat_size": 32, "width_ell": 8}, "sparse_tir_level": 0})
    B = T.match_buffer(b, (n, 32), "float32")
    C = T.match_buffer(c, (m, 32), "float32")
    A_ell = T.match_buffer(a_ell, (rows_ell * 8,), "float32")
    I_ell_indices = T.match_buffer(row_map_ell, (rows_ell,), "int32")
    J_ell_indices = T.match_buffer(indices_ell, (rows_ell * 8,), "int32")
    T.assume_buffer_domain(I_ell_indices, [0, m - 1])
    T.assume_buffer_domain(J_ell_indices, [0, n - 1])
    for o_ell in T.parallel(rows_ell):
        for i_ell in T.serial(1):
            C_local = T.alloc_buffer((32,), "float32", scope="local")
            for ax0_o in T.unroll(2):
                for ax0_i in T.vectorized(16):
                    C_local[ax0_o * 16 + ax0_i] = T.float32(0.0)
            v4: T.int32 = (o_ell + i_ell) * 8
            for j_ell in T.unroll(8):
                if (o_ell + i_ell) * 8 + (j_ell + 32) < rows_ell * 8:
                    T.prefetch(B[J_ell_indices[(o_ell + i_ell) * 8 + (j_ell + 32)], 0], 32)
                v2: T.int32 = v4 + j_ell
                v3: T.int32 = J_ell_indices[v2]
                for k_0 in T.unroll(2):
                    for k_1 in T.vectorized(16):
                        with T.block("csrmm_ell"):
                            C_local[k_0 * 16 + k_1] = C_local[k_0 * 16 + k_1] + A_ell[v2] * B[v3, k_0 * 16 + k_1]
            v5: T.int32 = I_ell_indices[o_ell + i_ell]
            for ax0 in T.unroll(32):
                T.atomic_add(C[v5, ax0], C_local[ax0])
