#include "runtime/bsr_conversion.h"

#include <algorithm>

namespace sparsetir {
namespace {

// Walks block row `br`: calls visit(block_column) once per distinct block
// column (in increasing order), using `mark` (one slot per block column, all
// -1 on entry and on exit) to drop repeats.
template <typename Index, typename Visit>
void ForEachBlock(const Index* indptr, const Index* indices, int64_t rows, int64_t block_h, int64_t block_w,
                  int64_t br, std::vector<int64_t>& mark, std::vector<int64_t>& seen, const Visit& visit) {
  seen.clear();
  const int64_t row_end = std::min(rows, (br + 1) * block_h);
  for (int64_t r = br * block_h; r < row_end; ++r) {
    for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      int64_t bc = indices[e] / block_w;
      if (mark[bc] < 0) {
        mark[bc] = 0;
        seen.push_back(bc);
      }
    }
  }
  std::sort(seen.begin(), seen.end());
  for (int64_t bc : seen) {
    visit(bc);
    mark[bc] = -1;
  }
}

}  // namespace

template <typename Index>
int64_t CountBsrBlocks(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, int64_t block_h,
                       int64_t block_w) {
  const int64_t block_rows = (rows + block_h - 1) / block_h, block_columns = (columns + block_w - 1) / block_w;
  std::vector<int64_t> mark(block_columns, -1), seen;
  int64_t count = 0;
  for (int64_t br = 0; br < block_rows; ++br) {
    ForEachBlock(indptr, indices, rows, block_h, block_w, br, mark, seen, [&](int64_t) { ++count; });
  }
  return count;
}

template <typename Index>
BsrStructure<Index> CsrToBsr(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, int64_t block_h,
                             int64_t block_w) {
  const int64_t block_rows = (rows + block_h - 1) / block_h, block_columns = (columns + block_w - 1) / block_w;
  const int64_t block_size = block_h * block_w;
  BsrStructure<Index> out;
  out.indptr.reserve(block_rows + 1);
  out.indptr.push_back(0);
  out.slot.resize(rows > 0 ? indptr[rows] : 0);
  std::vector<int64_t> mark(block_columns, -1), seen, position(block_columns, -1);
  for (int64_t br = 0; br < block_rows; ++br) {
    ForEachBlock(indptr, indices, rows, block_h, block_w, br, mark, seen, [&](int64_t bc) {
      position[bc] = static_cast<int64_t>(out.indices.size());
      out.indices.push_back(static_cast<Index>(bc));
    });
    // Every non-zero of the block row into its block's slot.
    const int64_t row_end = std::min(rows, (br + 1) * block_h);
    for (int64_t r = br * block_h; r < row_end; ++r) {
      for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
        int64_t c = indices[e];
        out.slot[e] = position[c / block_w] * block_size + (r - br * block_h) * block_w + (c % block_w);
      }
    }
    out.indptr.push_back(static_cast<Index>(out.indices.size()));
  }
  return out;
}

template BsrStructure<int32_t> CsrToBsr<int32_t>(const int32_t*, const int32_t*, int64_t, int64_t, int64_t, int64_t);
template BsrStructure<int64_t> CsrToBsr<int64_t>(const int64_t*, const int64_t*, int64_t, int64_t, int64_t, int64_t);
template int64_t CountBsrBlocks<int32_t>(const int32_t*, const int32_t*, int64_t, int64_t, int64_t, int64_t);
template int64_t CountBsrBlocks<int64_t>(const int64_t*, const int64_t*, int64_t, int64_t, int64_t, int64_t);

}  // namespace sparsetir
