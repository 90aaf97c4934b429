@T.prim_func
def csrmm_mean(
    a: T.handle,
    b: T.handle,
    c: T.handle,
    lengths: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    # C[i, k] = the mean over the non-zeros (i, j) of A[i, j] * B[j, k]: the
    # row's sum, then divided by L[i], its length (at least 1, so a row
    # without non-zeros gives 0). The sum is divided rather than each product
    # scaled, so tiny products do not underflow where their mean is
    # representable. The recipe merges the two row loops, so the division
    # runs on the row while it is still in registers.
    #
    # T.float32 (a name, not a string) is the accumulator's type: float32
    # for float32 and 16-bit values, float64 for float64 ones. The lengths
    # and the division take it, so a 16-bit row is divided before it is
    # rounded to 16 bits (once), and lengths past 256 (bfloat16) or 2048
    # (float16) stay exact.
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    K = T.sp.dense_fixed(feat_size)
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (J_detach, K), "float32")
    C = T.sp.match_buffer(c, (I, K), "float32")
    L = T.sp.match_buffer(lengths, (I,), T.float32)
    with T.sp.iteration([I, J, K], "SRS", "csrmm") as [i, j, k]:
        with T.init():
            C[i, k] = 0.0
        C[i, k] = C[i, k] + A[i, j] * B[j, k]
    with T.sp.iteration([I, K], "SS", "row_div") as [i, k]:
        C[i, k] = T.Cast("float32", T.float32(C[i, k]) / L[i])
