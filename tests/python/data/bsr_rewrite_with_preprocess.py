# The design document's bsr_rewrite_with_preprocess: kernels/csrmm.py decomposed
# into BSR 4, 16 and 32 (tests/python/test_format_decompose.py), reviewed by hand.
# Differences from the document, on purpose: one init iteration before the
# copies, which accumulate (each format holds a share of the non-zeros);
# guards where io * b + ii may pass m (m not a multiple of b).
@T.prim_func
def csrmm(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
    a_4: T.handle,
    indptr_4: T.handle,
    indices_4: T.handle,
    m_4: T.int32,
    n_4: T.int32,
    nnz_4: T.int32,
    a_16: T.handle,
    indptr_16: T.handle,
    indices_16: T.handle,
    m_16: T.int32,
    n_16: T.int32,
    nnz_16: T.int32,
    a_32: T.handle,
    indptr_32: T.handle,
    indices_32: T.handle,
    m_32: T.int32,
    n_32: T.int32,
    nnz_32: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "composable": 1, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n, "int32")
    K = T.sp.dense_fixed(feat_size, "int32")
    IO_4 = T.sp.dense_fixed(m_4, "int32")
    JO_4 = T.sp.compressed_varied(IO_4, (n_4, nnz_4), (indptr_4, indices_4), "int32")
    II_4 = T.sp.dense_fixed(4, "int32")
    JI_4 = T.sp.dense_fixed(4, "int32")
    IO_16 = T.sp.dense_fixed(m_16, "int32")
    JO_16 = T.sp.compressed_varied(IO_16, (n_16, nnz_16), (indptr_16, indices_16), "int32")
    II_16 = T.sp.dense_fixed(16, "int32")
    JI_16 = T.sp.dense_fixed(16, "int32")
    IO_32 = T.sp.dense_fixed(m_32, "int32")
    JO_32 = T.sp.compressed_varied(IO_32, (n_32, nnz_32), (indptr_32, indices_32), "int32")
    II_32 = T.sp.dense_fixed(32, "int32")
    JI_32 = T.sp.dense_fixed(32, "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    C = T.sp.match_buffer(c, (I, K), "float32")
    A_4 = T.sp.match_buffer(a_4, (IO_4, JO_4, II_4, JI_4), "float32")
    A_16 = T.sp.match_buffer(a_16, (IO_16, JO_16, II_16, JI_16), "float32")
    A_32 = T.sp.match_buffer(a_32, (IO_32, JO_32, II_32, JI_32), "float32")
    with T.sp.iteration([IO_4, JO_4, II_4, JI_4], "SSSS", "rewrite_A_4") as [io_4, jo_4, ii_4, ji_4]:
        T.sp.iteration_attr({"preprocess": True})
        A_4[io_4, jo_4, ii_4, ji_4] = T.Select(io_4 * 4 + ii_4 < m and jo_4 * 4 + ji_4 < n, A[io_4 * 4 + ii_4, jo_4 * 4 + ji_4], T.float32(0.0))
    with T.sp.iteration([IO_16, JO_16, II_16, JI_16], "SSSS", "rewrite_A_16") as [io_16, jo_16, ii_16, ji_16]:
        T.sp.iteration_attr({"preprocess": True})
        A_16[io_16, jo_16, ii_16, ji_16] = T.Select(io_16 * 16 + ii_16 < m and jo_16 * 16 + ji_16 < n, A[io_16 * 16 + ii_16, jo_16 * 16 + ji_16], T.float32(0.0))
    with T.sp.iteration([IO_32, JO_32, II_32, JI_32], "SSSS", "rewrite_A_32") as [io_32, jo_32, ii_32, ji_32]:
        T.sp.iteration_attr({"preprocess": True})
        A_32[io_32, jo_32, ii_32, ji_32] = T.Select(io_32 * 32 + ii_32 < m and jo_32 * 32 + ji_32 < n, A[io_32 * 32 + ii_32, jo_32 * 32 + ji_32], T.float32(0.0))
    with T.sp.iteration([I, K], "SS", "csrmm_init") as [i, k]:
        T.sp.iteration_attr({"init": True})
        C[i, k] = T.float32(0.0)
    with T.sp.iteration([IO_4, II_4, JO_4, JI_4, K], "SSRRS", "csrmm_4") as [io_4, ii_4, jo_4, ji_4, k]:
        T.sp.iteration_attr({"accumulate": True})
        if io_4 * 4 + ii_4 < m and jo_4 * 4 + ji_4 < n:
            C[io_4 * 4 + ii_4, k] = C[io_4 * 4 + ii_4, k] + A_4[io_4, jo_4, ii_4, ji_4] * B[jo_4 * 4 + ji_4, k]
    with T.sp.iteration([IO_16, II_16, JO_16, JI_16, K], "SSRRS", "csrmm_16") as [io_16, ii_16, jo_16, ji_16, k]:
        T.sp.iteration_attr({"accumulate": True})
        if io_16 * 16 + ii_16 < m and jo_16 * 16 + ji_16 < n:
            C[io_16 * 16 + ii_16, k] = C[io_16 * 16 + ii_16, k] + A_16[io_16, jo_16, ii_16, ji_16] * B[jo_16 * 16 + ji_16, k]
    with T.sp.iteration([IO_32, II_32, JO_32, JI_32, K], "SSRRS", "csrmm_32") as [io_32, ii_32, jo_32, ji_32, k]:
        T.sp.iteration_attr({"accumulate": True})
        if io_32 * 32 + ii_32 < m and jo_32 * 32 + ji_32 < n:
            C[io_32 * 32 + ii_32, k] = C[io_32 * 32 + ii_32, k] + A_32[io_32, jo_32, ii_32, ji_32] * B[jo_32 * 32 + ji_32, k]
