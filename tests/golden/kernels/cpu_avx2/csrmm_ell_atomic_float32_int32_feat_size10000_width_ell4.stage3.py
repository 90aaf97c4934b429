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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "composable": 1, "specialized": {"feat_size": 10000, "width_ell": 4}, "sparse_tir_level": 0})
    B = T.match_buffer(b, (n, 10000), "float32")
    C = T.match_buffer(c, (m, 10000), "float32")
    A_ell = T.match_buffer(a_ell, (rows_ell * 4,), "float32")
    I_ell_indices = T.match_buffer(row_map_ell, (rows_ell,), "int32")
    J_ell_indices = T.match_buffer(indices_ell, (rows_ell * 4,), "int32")
    T.assume_buffer_domain(I_ell_indices, [0, m - 1])
    T.assume_buffer_domain(J_ell_indices, [0, n - 1])
    for o_ell in T.parallel(rows_ell):
        for i_ell in T.serial(1):
            v6: T.int32 = I_ell_indices[o_ell + i_ell]
            v7: T.int32 = (o_ell + i_ell) * 4
            for j_ell in T.unroll(4):
                if (o_ell + i_ell) * 4 + (j_ell + 32) < rows_ell * 4:
                    T.prefetch(B[J_ell_indices[(o_ell + i_ell) * 4 + (j_ell + 32)], 0], 10000)
                v4: T.int32 = v7 + j_ell
                v5: T.int32 = J_ell_indices[v4]
                for k_0 in T.serial(1250):
                    for k_1 in T.vectorized(8):
                        with T.block("csrmm_ell"):
                            T.atomic_add(C[v6, k_0 * 8 + k_1], A_ell[v4] * B[v5, k_0 * 8 + k_1])
