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

// `like` (rows, *F) zeroed plus, at index[e], the rows t[e] of t (nnz, *F):
// the sums of an edge tensor by row (index = RowIds) or by column (index =
// indices). The index is widened to int64 first: index_add's int32 path runs
// 6x slower (nnz 1.4M x 4 heads, cond-mat-2005: 19.6 vs 3.4 ms).
inline at::Tensor SumByIndex(const at::Tensor& like, const at::Tensor& index, const at::Tensor& t) {
  return at::zeros_like(like).index_add(0, index.to(at::kLong), t);
}

}  // namespace sparsetir::ops
