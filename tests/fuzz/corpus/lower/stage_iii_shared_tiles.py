@T.prim_func
def spmv_tiles(
    a: T.handle,
    x: T.handle,
    y: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    # y = A x: a thread per row, 64 rows a block; the block copies x into
    # shared memory a tile of 64 elements at a time, and each thread adds its
    # row's non-zeros whose columns fall in the tile (found by binary search:
    # the row's columns are sorted).
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float32")
    X = T.match_buffer(x, (n,), "float32")
    Y = T.match_buffer(y, (m,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + 63) // 64, thread="blockIdx.x"):
        for t in T.thread_binding(64, thread="threadIdx.x"):
            XS = T.alloc_buffer((64,), "float32", scope="shared")
            ACC = T.alloc_buffer((1,), "float32", scope="local")
            POS = T.alloc_buffer((1,), "int32", scope="local")
            i: T.int32 = T.min(row_block * 64 + t, m - 1)
            end: T.int32 = J_indptr[i + 1]
            ACC[0] = T.float32(0.0)
            POS[0] = J_indptr[i]
            for tile in T.serial((n + 63) // 64):
                if tile * 64 + t < n:
                    XS[t] = X[tile * 64 + t]
                T.sp.sync_threads()
                stop: T.int32 = T.sp.lower_bound(indices, POS[0], end, tile * 64 + 64)
                for j in T.serial(stop - POS[0]):
                    ACC[0] = ACC[0] + A[POS[0] + j] * XS[J_indices[POS[0] + j] - tile * 64]
                POS[0] = stop
                T.sp.sync_threads()
            if row_block * 64 + t < m:
                Y[row_block * 64 + t] = ACC[0]
