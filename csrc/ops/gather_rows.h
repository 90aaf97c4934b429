// Rows of an edge tensor in another order: values.index_select(0, index),
// fast also where the rows are narrow (a few heads per non-zero).
#pragma once

#include <ATen/ATen.h>

namespace sparsetir::ops {

// values[index[p]] for every p: the rows (dimension 0) of `values` in the
// order `index` gives (a transpose's perm, say). On the cuda path, torch's
// index_select gives each row whose bytes are a multiple of 16 a block of
// 32 threads of its own (its vectorized gather), so that rows of 16 bytes
// (four float32 heads) leave 31 of the 32 idle: 1.0 ms for 1.68 M such rows
// on an H200, half of a sparse attention training step. There rows narrower
// than kNarrowRowBytes are gathered element by element through a flat index
// instead; elsewhere (the CPU) index_select serves.
at::Tensor GatherRows(const at::Tensor& values, const at::Tensor& index);

}  // namespace sparsetir::ops
