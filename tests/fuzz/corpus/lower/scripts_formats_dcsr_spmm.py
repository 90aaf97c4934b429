# DCSR SpMM: only the non-empty rows are stored (I compressed under the
# placeholder O); the output row is the coordinate of i, reached through the
# detached dense row iterator I_detach. The rows that are not stored are never
# visited by the product, so a first iteration zero-fills C.
@T.prim_func
def dcsr_spmm(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr_i: T.handle,
    indices_i: T.handle,
    indptr_j: T.handle,
    indices_j: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz_i: T.int32,
    nnz_j: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    O = T.sp.dense_fixed(1)
    I = T.sp.compressed_varied(O, (m, nnz_i), (indptr_i, indices_i), "int32")
    J = T.sp.compressed_varied(I, (n, nnz_j), (indptr_j, indices_j), "int32")
    I_detach = T.sp.dense_fixed(m)
    J_detach = T.sp.dense_fixed(n)
    K = T.sp.dense_fixed(feat_size)
    A = T.sp.match_buffer(a, (O, I, J), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    C = T.sp.match_buffer(c, (I_detach, K), "float32")
    with T.sp.iteration([I_detach, K], "SS", "zero") as [id, k]:
        C[id, k] = 0.0
    with T.sp.iteration([O, I, J, K], "SSRS", "dcsrmm") as [o, i, j, k]:
        with T.init():
            C[i, k] = 0.0
        C[i, k] = C[i, k] + A[o, i, j] * B[j, k]
