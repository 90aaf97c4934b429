// Row facts of a CSR (or BSR) structure as tensors, for the backward passes
// (autograd_*.cc). Sizes stay symbolic, so torch.compile traces them.
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace sparsetir::ops {

// Non-zeros (blocks) per row.
inline at::Tensor RowLengths(const at::Tensor& indptr) { return indptr.slice(0, 1) - indptr.slice(0, 0, -1); }

// The row of every non-zero: row r repeated length(r) times (indptr's dtype).
inline at::Tensor RowIds(const at::Tensor& indptr, const at::Tensor& indices) {
  return at::repeat_interleave_symint(RowLengths(indptr), std::optional<c10::SymInt>(indices.sym_size(0)));
}

}  // namespace sparsetir::ops
