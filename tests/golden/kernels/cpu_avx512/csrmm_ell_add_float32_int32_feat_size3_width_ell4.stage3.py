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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "composable": 1, "specialized": {"feat_size": 3, "width_ell": 4}, "sparse_tir_level": 0})
    B = T.match_buffer(b, (n, 3), "float32")
    C = T.match_buffer(c, (m, 3), "float32")
    A_ell = T.match_buffer(a_ell, (rows_ell * 4,), "float32")
    I_ell_indices = T.match_buffer(row_map_ell, (rows_ell,), "int32")
    J_ell_indices = T.match_buffer(indices_ell, (rows_ell * 4,), "int32")
    T.assume_buffer_domain(I_ell_indices, [0, m - 1])
    T.assume_buffer_domain(J_ell_indices, [0, n - 1])
    for o_ell in T.parallel(rows_ell):
        for i_ell in T.serial(1):
            C_local = T.alloc_buffer((3,), "float32", scope="local")
            v0: T.int32 = I_ell_indices[o_ell + i_ell]
            for ax0 in T.unroll(3):
                C_local[ax0] = C[v0, ax0]
            v3: T.int32 = (o_ell + i_ell) * 4
            for j_ell in T.unroll(4):
                if (o_ell + i_ell) * 4 + (j_ell + 32) < rows_ell * 4:
                    T.prefetch(B[J_ell_indices[(o_ell + i_ell) * 4 + (j_ell + 32)], 0], 3)
                v1: T.int32 = v3 + j_ell
                v2: T.int32 = J_ell_indices[v1]
                for k in T.serial(3):
                    with T.block("csrmm_ell"):
                        C_local[k] = C_local[k] + A_ell[v1] * B[v2, k]
            v4: T.int32 = I_ell_indices[o_ell + i_ell]
            for ax0 in T.unroll(3):
                C[v4, ax0] = C_local[ax0]
