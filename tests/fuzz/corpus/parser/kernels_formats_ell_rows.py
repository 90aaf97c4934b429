# One ELL bucket of a hyb decomposition: `rows` ELL rows of `width` slots.
# ELL row o holds (part of) the non-zeros of original row row_map[o]: the row
# map is the coordinate array of a one-slot compressed level, so the runtime
# checks it like any other index array. A long row split in pieces has
# several ELL rows with the same row; padding slots carry value 0.
# The rule: the bucket stands for the buffer A of a CSR computation; the ELL
# row and its mapped row stand for I, the slots for J.
@T.prim_func
def ell_rows(
    a: T.handle,
    row_map: T.handle,
    indices: T.handle,
    rows: T.int32,
    m: T.int32,
    n: T.int32,
    width: T.int32,
) -> None:
    O = T.sp.dense_fixed(rows)
    I = T.sp.compressed_fixed(O, (m, 1), row_map, "int32")
    J = T.sp.compressed_fixed(I, (n, width), indices, "int32")
    A = T.sp.match_buffer(a, (O, I, J), "float32")
    T.func_attr({
        "buffer_to_rewrite": "A",
        "iterator_map": {"I": ["O", "I"], "J": ["J"]},
        "idx_map": (lambda i, j: (0, i, j)),
        "inv_idx_map": (lambda o, i, j: (i, j)),
    })
    pass
