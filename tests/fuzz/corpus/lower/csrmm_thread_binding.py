# Stage III by hand, as a CUDA schedule leaves it: rows on blocks, features on
# threads, an unrolled inner loop and an atomic update.
@T.prim_func
def csrmm(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32, feat_size: T.int32, nnz: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    B = T.match_buffer(b, (n, feat_size), "float32")
    C = T.match_buffer(c, (m, feat_size), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    for i in T.thread_binding(m, thread="blockIdx.x"):
        for k in T.thread_binding(feat_size, thread="threadIdx.x"):
            for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
                for u in T.unroll(2):
                    T.atomic_add(C[i, k], T.if_then_else(u == 0, A[J_indptr[i] + j] * B[J_indices[J_indptr[i] + j], k], T.float32(0.0)))
