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
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 5, "heads": 3}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 3, 5), "float32")
    Y = T.match_buffer(y, (n, 3, 5), "float32")
    O = T.match_buffer(out, (nnz, 3), "float32")
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
                v1: T.int32 = J_indices[J_indptr[i] + j]
                v2: T.int32 = J_indptr[i] + j
                for h in T.thread_binding(3, thread="blockIdx.y"):
                    O_local = T.alloc_buffer((1,), "float32", scope="local")
                    with T.block("sddmm_heads_init"):
                        O_local[0] = T.float32(0.0)
                    for k in T.serial(5):
                        with T.block("sddmm_heads"):
                            O_local[0] = O_local[0] + X[i, h, k] * Y[v1, h, k]
                    O[v2, h] = O_local[0]
