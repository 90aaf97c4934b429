// COO -> CSR conversion of a structure, torch-free. As with the BSR
// conversion, values are not copied: the conversion returns, for every COO
// entry, its slot in the CSR values, so values move with one scatter
// (csr_values = zeros(nnz_out).index_add_(0, slot, coo_values)) whenever they
// change, while the structure is converted once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparsetir {

template <typename Index>
struct CsrFromCoo {
  std::vector<Index> indptr;   // rows + 1; indptr[rows] = nnz() (the stored entries)
  std::vector<Index> indices;  // the column of each stored entry; sorted within each row
  std::vector<int64_t> slot;   // per COO entry: its position in the CSR values (indices)
  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
};

// Sorts the `nnz` entries (row[e], col[e]) of a rows x columns COO structure
// by row, then column. With `sum_duplicates`, equal (row, col) pairs share
// one slot (their values add up); otherwise every entry keeps its own slot
// and equal pairs stay in their COO order (the sort is stable).
//
// A negative or out-of-range row / col is a UserError (ValueError in Python)
// that starts with `op`, names the argument ("row" / "col") and the first bad
// entry. So is a result too large for `Index`.
template <typename Index>
CsrFromCoo<Index> CooToCsr(const std::string& op, const Index* row, const Index* col, int64_t nnz, int64_t rows,
                           int64_t columns, bool sum_duplicates);

}  // namespace sparsetir
