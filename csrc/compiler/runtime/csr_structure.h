// Runtime classes over a CSR structure (indptr, indices), torch-free: the
// one-time validation an operator runs per graph, and the transpose (CSR ->
// CSC) that backward passes use. Both work on int32 and int64 indices.
#pragma once

#include <cstdint>
#include <string>

namespace sparsetir {

// What validation learned about a structure. `max_index` is -1 without
// non-zeros; an operator then checks `max_index < columns` in O(1) per call.
struct CsrSummary {
  int64_t rows = 0;
  int64_t nnz = 0;
  int64_t max_index = -1;
  int64_t empty_rows = 0;
  int64_t max_row_length = 0;
  // Mean |column - row| over the non-zeros: how far from the diagonal the
  // structure reaches. A banded matrix (small distance) gathers dense rows
  // near its own, which stay cached; a scattered one gathers from anywhere.
  double mean_distance = 0;
  // The row lengths' sum of squares (with nnz and rows, their spread) and
  // the slots of every non-empty row padded to the next power of two (hyb's
  // one-part buckets): the format chooser's tests, taken in this pass so
  // that a new graph needs no second look at its rows.
  double row_length_squares = 0;
  int64_t padded_slots = 0;
  // Rows whose columns are not in non-decreasing order: a kernel that finds
  // a row's columns in a range by binary search needs none.
  int64_t unsorted_rows = 0;
};

// Checks indptr[0] == 0, indptr never decreasing, indptr[rows] == nnz and
// every index >= 0. Throws a UserError (ValueError in Python) that starts with
// `op` and names the argument ("indptr" / "indices") and the first bad element.
template <typename Index>
CsrSummary ValidateCsr(const std::string& op, const Index* indptr, int64_t rows, const Index* indices, int64_t nnz);

// How closely each gather follows one a moment before: near[b] counts the
// non-zeros whose column is within 2^b of the column the previous row holds
// at the same position (past that row's length, of the row's own previous
// non-zero; a row's first, of its row number), for b < kNearBits. An arrow
// or a band walks the dense rows as streams the hardware prefetcher follows,
// where software prefetches only cost instructions. A validated structure
// (non-negative indices, so that every difference fits).
constexpr int kNearBits = 7;  // distances up to 2^6 = 64 rows
template <typename Index>
void CountNearGathers(const Index* indptr, int64_t rows, const Index* indices, int64_t near[kNearBits]);

// The transpose of a rows x columns CSR structure: out_indptr (columns + 1),
// out_indices (nnz, the row of each non-zero) and perm (nnz): the position in
// the original of each non-zero of the transpose, so values_t = values[perm].
// Within a column the rows stay in ascending order (a stable counting sort).
// The structure must be valid (ValidateCsr) with every index < columns.
template <typename Index>
void TransposeCsr(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, Index* out_indptr,
                  Index* out_indices, Index* perm);

}  // namespace sparsetir
