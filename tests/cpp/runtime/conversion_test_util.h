// Random and hand-written CSR / COO structures for the conversion tests, and
// the dense matrix they stand for (values 1, 2, ... in entry order: exact in
// double, distinct, never zero).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace sparsetir::testing {

template <typename Index>
struct TestCsr {
  int64_t rows = 0, columns = 0;
  std::vector<Index> indptr{0};
  std::vector<Index> indices;
  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
  // values[e] = e + 1.
  std::vector<double> Dense() const {
    std::vector<double> dense(rows * columns, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) dense[r * columns + indices[e]] += e + 1.0;
    }
    return dense;
  }
};

template <typename Index>
TestCsr<Index> FromRows(int64_t rows, int64_t columns, const std::vector<std::vector<int64_t>>& row_columns) {
  TestCsr<Index> csr;
  csr.rows = rows;
  csr.columns = columns;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c : row_columns[r]) csr.indices.push_back(static_cast<Index>(c));
    csr.indptr.push_back(static_cast<Index>(csr.indices.size()));
  }
  return csr;
}

// A seeded random CSR: each row gets a length drawn from a power law capped
// at `columns` (a few long rows, many short ones, some empty), plus
// `dense_rows` made full; `shuffle` leaves columns unsorted within a row and
// `duplicates` repeats that many entries inside their row.
template <typename Index>
TestCsr<Index> RandomCsr(int64_t rows, int64_t columns, unsigned seed, const std::set<int64_t>& dense_rows = {},
                         bool shuffle = false, int duplicates = 0) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int64_t>> row_columns(rows);
  std::vector<int64_t> all(columns);
  for (int64_t c = 0; c < columns; ++c) all[c] = c;
  for (int64_t r = 0; r < rows; ++r) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    int64_t length = static_cast<int64_t>(std::min<double>(columns, 0.5 / (u * u + 1e-9) - 0.5));
    if (dense_rows.count(r)) length = columns;
    std::shuffle(all.begin(), all.end(), rng);
    row_columns[r].assign(all.begin(), all.begin() + length);
    if (!shuffle) std::sort(row_columns[r].begin(), row_columns[r].end());
  }
  for (int d = 0; d < duplicates && rows > 0; ++d) {
    auto& cs = row_columns[rng() % rows];
    if (cs.empty()) continue;
    const size_t i = rng() % cs.size();
    const int64_t repeated = cs[i];
    cs.insert(cs.begin() + i, repeated);  // next to itself: a sorted row stays sorted
  }
  return FromRows<Index>(rows, columns, row_columns);
}

}  // namespace sparsetir::testing
