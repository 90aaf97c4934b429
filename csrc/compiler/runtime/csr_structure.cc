#include "runtime/csr_structure.h"

#include <bit>
#include <vector>

#include "support/error.h"

namespace sparsetir {

template <typename Index>
CsrSummary ValidateCsr(const std::string& op, const Index* indptr, int64_t rows, const Index* indices, int64_t nnz) {
  CsrSummary s;
  uint64_t padded_slots = 0;
  s.rows = rows;
  s.nnz = nnz;
  if (indptr[0] != 0) {
    ThrowArgumentError(op + ": indptr must start at 0, got indptr[0] = " + std::to_string(indptr[0]));
  }
  for (int64_t r = 0; r < rows; ++r) {
    // Compared before subtracting: with int64 indices the difference of two
    // arbitrary entries can overflow. Once the order holds, both are >= 0.
    if (indptr[r + 1] < indptr[r]) {
      ThrowArgumentError(op + ": indptr must be non-decreasing, but indptr[" + std::to_string(r + 1) +
                         "] = " + std::to_string(indptr[r + 1]) + " is smaller than indptr[" + std::to_string(r) +
                         "] = " + std::to_string(indptr[r]));
    }
    const int64_t length = static_cast<int64_t>(indptr[r + 1]) - indptr[r];
    if (length == 0) ++s.empty_rows;
    if (length > s.max_row_length) s.max_row_length = length;
    s.row_length_squares += static_cast<double>(length) * static_cast<double>(length);
    // Unsigned: the lengths are not known to sum to nnz until the check below
    // (a malformed indptr may hold rows of 2^62), and once they do, the
    // padded slots are at most 2 nnz.
    if (length > 0) padded_slots += uint64_t{1} << std::bit_width(static_cast<uint64_t>(length - 1));
  }
  s.padded_slots = static_cast<int64_t>(padded_slots);
  if (indptr[rows] != nnz) {
    ThrowArgumentError(op + ": indptr must end at nnz = " + std::to_string(nnz) + " (the length of indices), got indptr[" +
                       std::to_string(rows) + "] = " + std::to_string(indptr[rows]));
  }
  double distance = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      int64_t c = indices[e];
      if (c < 0) {
        ThrowArgumentError(op + ": indices must be non-negative, got indices[" + std::to_string(e) + "] = " +
                           std::to_string(c));
      }
      if (c > s.max_index) s.max_index = c;
      distance += static_cast<double>(c > r ? c - r : r - c);
    }
  }
  s.mean_distance = nnz > 0 ? distance / static_cast<double>(nnz) : 0;
  return s;
}

template <typename Index>
void TransposeCsr(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, Index* out_indptr,
                  Index* out_indices, Index* perm) {
  const int64_t nnz = indptr[rows];
  // Count per column, prefix-sum into out_indptr, then place every non-zero
  // in row order, which keeps each column's rows sorted.
  std::vector<int64_t> next(columns + 1, 0);
  for (int64_t e = 0; e < nnz; ++e) ++next[indices[e] + 1];
  for (int64_t c = 0; c < columns; ++c) next[c + 1] += next[c];
  for (int64_t c = 0; c <= columns; ++c) out_indptr[c] = static_cast<Index>(next[c]);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      int64_t slot = next[indices[e]]++;
      out_indices[slot] = static_cast<Index>(r);
      perm[slot] = static_cast<Index>(e);
    }
  }
}

template CsrSummary ValidateCsr<int32_t>(const std::string&, const int32_t*, int64_t, const int32_t*, int64_t);
template CsrSummary ValidateCsr<int64_t>(const std::string&, const int64_t*, int64_t, const int64_t*, int64_t);
template void TransposeCsr<int32_t>(const int32_t*, const int32_t*, int64_t, int64_t, int32_t*, int32_t*, int32_t*);
template void TransposeCsr<int64_t>(const int64_t*, const int64_t*, int64_t, int64_t, int64_t*, int64_t*, int64_t*);

}  // namespace sparsetir
