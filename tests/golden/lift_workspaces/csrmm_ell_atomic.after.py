@T.prim_func
def csrmm_ell_atomic(
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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "composable": 1, "sparse_tir_level": 0})
    B = T.match_buffer(b, (n, feat_size), "float32")
    C = T.match_buffer(c, (m, feat_size), "float32")
    A_ell = T.match_buffer(a_ell, (rows_ell * width_ell,), "float32")
    I_ell_indices = T.match_buffer(row_map_ell, (rows_ell,), "int32")
    J_ell_indices = T.match_buffer(indices_ell, (rows_ell * width_ell,), "int32")
    T.assume_buffer_domain(I_ell_indices, [0, m - 1])
    T.assume_buffer_domain(J_ell_indices, [0, n - 1])
    for o_ell in T.serial(rows_ell):
        for i_ell in T.serial(1):
            v1: T.int32 = (o_ell + i_ell) * width_ell
            for j_ell in T.serial(width_ell):
                v0: T.int32 = v1 + j_ell
                for k in T.serial(feat_size):
                    with T.block("csrmm_ell"):
                        T.atomic_add(C[I_ell_indices[o_ell + i_ell], k], A_ell[v0] * B[J_ell_indices[v0], k])
