@T.prim_func
def sddmm_add(
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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 4}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 4), "float32")
    Y = T.match_buffer(y, (n, 4), "float32")
    O = T.match_buffer(out, (nnz, 4), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for ij_0 in T.thread_binding((nnz + 127) // 128, thread="blockIdx.x"):
        for ij_1 in T.thread_binding(128, thread="threadIdx.x"):
            if ij_0 * 128 + ij_1 < nnz:
                i_flat: T.int32 = T.sp.lower_bound(indptr, 0, m + 1, ij_0 * 128 + ij_1 + 1) - 1
                i: T.int32 = i_flat
                j: T.int32 = ij_0 * 128 + ij_1 - J_indptr[i]
                v0: T.int32 = J_indptr[i] + j
                v1: T.int32 = J_indices[v0]
                for f in T.thread_binding(4, thread="blockIdx.y"):
                    with T.block("sddmm_add"):
                        O[v0, f] = X[i, f] + Y[v1, f]
