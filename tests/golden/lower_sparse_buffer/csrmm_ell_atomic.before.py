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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "composable": 1, "sparse_tir_level": 1})
    I = T.sp.dense_fixed(m, "int32")
    J_detach = T.sp.dense_fixed(n, "int32")
    K = T.sp.dense_fixed(feat_size, "int32")
    O_ell = T.sp.dense_fixed(rows_ell, "int32")
    I_ell = T.sp.compressed_fixed(O_ell, (m, 1), row_map_ell, "int32")
    J_ell = T.sp.compressed_fixed(I_ell, (n, width_ell), indices_ell, "int32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    C = T.sp.match_buffer(c, (I, K), "float32")
    A_ell = T.sp.match_buffer(a_ell, (O_ell, I_ell, J_ell), "float32")
    I_ell_indices = T.sp.match_buffer(row_map_ell, (O_ell, I_ell), "int32")
    J_ell_indices = T.sp.match_buffer(indices_ell, (O_ell, I_ell, J_ell), "int32")
    T.assume_buffer_domain(I_ell_indices, [0, m - 1])
    T.assume_buffer_domain(J_ell_indices, [0, n - 1])
    for o_ell in T.serial(rows_ell):
        for i_ell in T.serial(1):
            for j_ell in T.serial(width_ell):
                for k in T.serial(feat_size):
                    with T.block("csrmm_ell"):
                        T.atomic_add(C[I_ell_indices[o_ell, i_ell], k], A_ell[o_ell, i_ell, j_ell] * B[J_ell_indices[o_ell, i_ell, j_ell], k])
