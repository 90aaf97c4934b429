# Every stored element of a 3-D CSF tensor scaled by a vector along its last
# mode: out[i, j, k] = T[i, j, k] * v[k], on the tensor's own structure. All
# three iterators are spatial, so the whole CSF can be fused into one loop.
@T.prim_func
def csf_scale(
    t: T.handle,
    v: T.handle,
    out: T.handle,
    indptr_j: T.handle,
    indices_j: T.handle,
    indptr_k: T.handle,
    indices_k: T.handle,
    d0: T.int32,
    d1: T.int32,
    d2: T.int32,
    nnz_j: T.int32,
    nnz_k: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(d0)
    J = T.sp.compressed_varied(I, (d1, nnz_j), (indptr_j, indices_j), "int32")
    K = T.sp.compressed_varied(J, (d2, nnz_k), (indptr_k, indices_k), "int32")
    K_detach = T.sp.dense_fixed(d2)
    X = T.sp.match_buffer(t, (I, J, K), "float32")
    V = T.sp.match_buffer(v, (K_detach,), "float32")
    Y = T.sp.match_buffer(out, (I, J, K), "float32")
    with T.sp.iteration([I, J, K], "SSS", "scale") as [i, j, k]:
        Y[i, j, k] = X[i, j, k] * V[k]
