#include "runtime/csr_structure.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "support/error.h"

namespace sparsetir {

namespace {

// Row r's |column - r| summed. Integer arithmetic (with the columns below
// 2^32 every term fits 33 bits, so a run of 2^30 of them fits an int64)
// leaves the loop free of a floating-point chain and vectorizable; a column
// of 2^32 or more takes the floating-point sum.
template <typename Index>
double RowDistance(const Index* indices, int64_t begin, int64_t end, int64_t r, bool narrow) {
  double total = 0;
  if (!narrow) {
    for (int64_t e = begin; e < end; ++e) total += std::abs(static_cast<double>(indices[e]) - static_cast<double>(r));
    return total;
  }
  constexpr int64_t kRun = int64_t{1} << 30;
  for (int64_t run = begin; run < end; run += kRun) {
    const int64_t stop = std::min(end, run + kRun);
    int64_t sum = 0;
    for (int64_t e = run; e < stop; ++e) {
      const int64_t d = static_cast<int64_t>(indices[e]) - r;
      sum += d < 0 ? -d : d;
    }
    total += static_cast<double>(sum);
  }
  return total;
}

[[noreturn]] void ThrowNegativeIndex(const std::string& op, int64_t e, int64_t c) {
  ThrowArgumentError(op + ": indices must be non-negative, got indices[" + std::to_string(e) + "] = " +
                     std::to_string(c));
}

}  // namespace

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
  // The indices in one flat pass (a min / max reduction the compiler
  // vectorizes); the first negative one is looked for only when there is one.
  Index low = 0, high = -1;
  if (nnz > 0) low = high = indices[0];
  for (int64_t e = 1; e < nnz; ++e) {
    low = std::min(low, indices[e]);
    high = std::max(high, indices[e]);
  }
  if (low < 0) {
    for (int64_t e = 0; e < nnz; ++e) {
      if (indices[e] < 0) ThrowNegativeIndex(op, e, indices[e]);
    }
  }
  s.max_index = nnz > 0 ? static_cast<int64_t>(high) : -1;
  const bool narrow = s.max_index < (int64_t{1} << 32) && rows <= (int64_t{1} << 32);
  double distance = 0;
  for (int64_t r = 0; r < rows; ++r) {
    distance += RowDistance(indices, indptr[r], indptr[r + 1], r, narrow);
    s.unsorted_rows += !std::is_sorted(indices + indptr[r], indices + indptr[r + 1]);
  }
  s.mean_distance = nnz > 0 ? distance / static_cast<double>(nnz) : 0;
  return s;
}

template <typename Index>
void CountNearGathers(const Index* indptr, int64_t rows, const Index* indices, int64_t near[kNearBits]) {
  int64_t histogram[kNearBits] = {};
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t begin = indptr[r], end = indptr[r + 1];
    const int64_t previous = r > 0 ? indptr[r - 1] : 0, previous_length = r > 0 ? begin - previous : 0;
    for (int64_t e = begin; e < end; ++e) {
      const int64_t p = e - begin;
      const int64_t before = p < previous_length ? static_cast<int64_t>(indices[previous + p])
                             : p > 0             ? static_cast<int64_t>(indices[e - 1])
                                                 : r;
      const uint64_t distance = static_cast<uint64_t>(std::abs(static_cast<int64_t>(indices[e]) - before));
      // 0 or 1 -> 0, 2 -> 1, 3..4 -> 2, ...: the least b with distance <= 2^b
      const int bits = distance <= 1 ? 0 : static_cast<int>(std::bit_width(distance - 1));
      if (bits < kNearBits) ++histogram[bits];
    }
  }
  for (int b = 0; b < kNearBits; ++b) near[b] = histogram[b] + (b > 0 ? near[b - 1] : 0);
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
template void CountNearGathers<int32_t>(const int32_t*, int64_t, const int32_t*, int64_t[kNearBits]);
template void CountNearGathers<int64_t>(const int64_t*, int64_t, const int64_t*, int64_t[kNearBits]);
template void TransposeCsr<int32_t>(const int32_t*, const int32_t*, int64_t, int64_t, int32_t*, int32_t*, int32_t*);
template void TransposeCsr<int64_t>(const int64_t*, const int64_t*, int64_t, int64_t, int64_t*, int64_t*, int64_t*);

}  // namespace sparsetir
