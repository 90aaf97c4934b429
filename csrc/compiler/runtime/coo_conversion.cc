#include "runtime/coo_conversion.h"

#include <algorithm>
#include <limits>

#include "support/error.h"

namespace sparsetir {
namespace {

// Throws for the first entry of `values` outside [0, bound).
template <typename Index>
void CheckInRange(const std::string& op, const char* name, const Index* values, int64_t nnz, int64_t bound,
                  const char* bound_name) {
  for (int64_t e = 0; e < nnz; ++e) {
    if (values[e] < 0 || values[e] >= bound) {
      ThrowArgumentError(MakeMessage() << op << ": argument '" << name << "' holds " << name << "[" << e
                                       << "] = " << values[e] << ", out of range for " << bound << " " << bound_name
                                       << " (it must be in [0, " << bound << "))");
    }
  }
}

// A COO entry on its way to CSR: its column and its position in the input.
struct Entry {
  int64_t column;
  int64_t index;
  bool operator<(const Entry& other) const {
    return column != other.column ? column < other.column : index < other.index;
  }
};

// The COO entries in CSR order: a stable counting sort by row, then a sort
// by (column, input position) within each row, which keeps equal pairs in
// input order. The entries carry their column, so the per-row sorts read
// contiguous memory instead of gathering from `col`; a counting sort over
// the columns would cost O(columns), which may dwarf nnz.
template <typename Index>
std::vector<Entry> RowMajorEntries(const Index* row, const Index* col, int64_t nnz, int64_t rows,
                                   std::vector<int64_t>& row_start) {
  row_start.assign(rows + 1, 0);
  for (int64_t e = 0; e < nnz; ++e) ++row_start[row[e] + 1];
  for (int64_t r = 0; r < rows; ++r) row_start[r + 1] += row_start[r];
  std::vector<int64_t> next(row_start.begin(), row_start.end() - 1);
  std::vector<Entry> entries(nnz);
  for (int64_t e = 0; e < nnz; ++e) entries[next[row[e]]++] = Entry{col[e], e};
  for (int64_t r = 0; r < rows; ++r) std::sort(entries.begin() + row_start[r], entries.begin() + row_start[r + 1]);
  return entries;
}

}  // namespace

template <typename Index>
CsrFromCoo<Index> CooToCsr(const std::string& op, const Index* row, const Index* col, int64_t nnz, int64_t rows,
                           int64_t columns, bool sum_duplicates) {
  CheckInRange(op, "row", row, nnz, rows, "rows");
  CheckInRange(op, "col", col, nnz, columns, "columns");
  if (nnz > static_cast<int64_t>(std::numeric_limits<Index>::max())) {
    ThrowArgumentError(MakeMessage() << op << ": " << nnz << " entries do not fit the index dtype (at most "
                                     << std::numeric_limits<Index>::max() << "); use int64 indices");
  }
  std::vector<int64_t> row_start;
  const std::vector<Entry> entries = RowMajorEntries(row, col, nnz, rows, row_start);
  CsrFromCoo<Index> out;
  out.indptr.reserve(rows + 1);
  out.indptr.push_back(0);
  out.indices.reserve(nnz);
  out.slot.resize(nnz);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row_begin = out.nnz();
    for (int64_t k = row_start[r]; k < row_start[r + 1]; ++k) {
      const Entry& entry = entries[k];
      // Sorted by column, so a duplicate follows the entry it repeats.
      if (sum_duplicates && out.nnz() > row_begin && out.indices.back() == entry.column) {
        out.slot[entry.index] = out.nnz() - 1;
        continue;
      }
      out.slot[entry.index] = out.nnz();
      out.indices.push_back(static_cast<Index>(entry.column));
    }
    out.indptr.push_back(static_cast<Index>(out.nnz()));
  }
  return out;
}

template CsrFromCoo<int32_t> CooToCsr<int32_t>(const std::string&, const int32_t*, const int32_t*, int64_t, int64_t,
                                               int64_t, bool);
template CsrFromCoo<int64_t> CooToCsr<int64_t>(const std::string&, const int64_t*, const int64_t*, int64_t, int64_t,
                                               int64_t, bool);

}  // namespace sparsetir
