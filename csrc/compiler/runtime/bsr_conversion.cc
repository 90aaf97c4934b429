#include "runtime/bsr_conversion.h"

#include <algorithm>

#include "runtime/divide.h"
#include "runtime/parallel.h"

namespace sparsetir {
namespace {

// Walks block row `br`: calls visit(block_column) once per distinct block
// column (in increasing order), using `mark` (one slot per block column, all
// -1 on entry and on exit) to drop repeats.
template <typename Index, typename Divide, typename Visit>
void ForEachBlock(const Index* indptr, const Index* indices, int64_t rows, int64_t block_h, const Divide& divide,
                  int64_t br, std::vector<int64_t>& mark, std::vector<int64_t>& seen, const Visit& visit) {
  seen.clear();
  const int64_t row_end = std::min(rows, (br + 1) * block_h);
  for (int64_t r = br * block_h; r < row_end; ++r) {
    for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      const int64_t bc = divide(indices[e]);
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

// Block rows are cut into at most this many chunks, each converted by one
// thread with scratch of its own (one slot per block column).
constexpr int64_t kChunks = 64;

struct BlockRowChunks {
  int64_t block_rows, rows_per_chunk, chunks;
  BlockRowChunks(int64_t rows, int64_t block_h) {
    block_rows = (rows + block_h - 1) / block_h;
    rows_per_chunk = std::max<int64_t>(1, (block_rows + kChunks - 1) / kChunks);
    chunks = block_rows == 0 ? 0 : (block_rows + rows_per_chunk - 1) / rows_per_chunk;
  }
  int64_t begin(int64_t chunk) const { return chunk * rows_per_chunk; }
  int64_t end(int64_t chunk) const { return std::min(block_rows, (chunk + 1) * rows_per_chunk); }
};

// Distinct block columns of block row `br`, counted with `stamp` (the last
// block row that touched each block column: nothing to reset, no order).
template <typename Index, typename Divide>
int64_t CountBlockRow(const Index* indptr, const Index* indices, int64_t rows, int64_t block_h, const Divide& divide,
                      int64_t br, std::vector<int64_t>& stamp) {
  int64_t count = 0;
  const int64_t row_end = std::min(rows, (br + 1) * block_h);
  for (int64_t e = indptr[br * block_h]; e < indptr[row_end]; ++e) {
    const int64_t bc = divide(indices[e]);
    count += stamp[bc] != br;
    stamp[bc] = br;
  }
  return count;
}

// Calls body(divide, chunk_begin, chunk_end) on the chunks of block rows in
// parallel, `divide` dividing column indices (< columns) by block_w: a
// multiply and shift where the indices allow, else a division.
template <typename Body>
void ParallelOverChunks(const BlockRowChunks& plan, int64_t columns, int64_t block_w,
                        const SparsetirLauncher* launcher, const Body& body) {
  auto run = [&](const auto& divide) {
    ParallelFor(launcher, plan.chunks, 1, [&](int64_t begin, int64_t end) { body(divide, begin, end); });
  };
  if (columns <= DivideBy::kLimit) {
    run(DivideBy(block_w));
  } else {
    run([block_w](int64_t c) { return c / block_w; });
  }
}

// visit(chunk, br, blocks) for every block row, with its number of blocks.
template <typename Index, typename Visit>
void CountBlockRows(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, int64_t block_h,
                    int64_t block_w, const BlockRowChunks& plan, const SparsetirLauncher* launcher,
                    const Visit& visit) {
  const int64_t block_columns = (columns + block_w - 1) / block_w;
  ParallelOverChunks(plan, columns, block_w, launcher, [&](const auto& divide, int64_t begin, int64_t end) {
    std::vector<int64_t> stamp(block_columns, -1);
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      for (int64_t br = plan.begin(chunk); br < plan.end(chunk); ++br) {
        visit(chunk, br, CountBlockRow(indptr, indices, rows, block_h, divide, br, stamp));
      }
    }
  });
}

}  // namespace

template <typename Index>
int64_t CountBsrBlocks(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, int64_t block_h,
                       int64_t block_w, const SparsetirLauncher* launcher) {
  const BlockRowChunks plan(rows, block_h);
  std::vector<int64_t> counts(plan.chunks, 0);
  CountBlockRows(indptr, indices, rows, columns, block_h, block_w, plan, launcher,
                 [&](int64_t chunk, int64_t, int64_t blocks) { counts[chunk] += blocks; });
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  return total;
}

template <typename Index>
BsrStructure<Index> CsrToBsr(const Index* indptr, const Index* indices, int64_t rows, int64_t columns, int64_t block_h,
                             int64_t block_w, const SparsetirLauncher* launcher) {
  const int64_t block_columns = (columns + block_w - 1) / block_w;
  const int64_t block_size = block_h * block_w;
  const BlockRowChunks plan(rows, block_h);
  BsrStructure<Index> out;
  // Pass 1: blocks per block row, then their offsets.
  out.indptr.assign(plan.block_rows + 1, 0);
  CountBlockRows(indptr, indices, rows, columns, block_h, block_w, plan, launcher,
                 [&](int64_t, int64_t br, int64_t blocks) { out.indptr[br + 1] = static_cast<Index>(blocks); });
  for (int64_t br = 0; br < plan.block_rows; ++br) out.indptr[br + 1] += out.indptr[br];
  // Pass 2: each block row's sorted block columns, and every non-zero's slot.
  out.indices.resize(out.indptr[plan.block_rows]);
  out.slot.resize(rows > 0 ? indptr[rows] : 0);
  ParallelOverChunks(plan, columns, block_w, launcher, [&](const auto& divide, int64_t begin, int64_t end) {
    std::vector<int64_t> mark(block_columns, -1), seen, position(block_columns, -1);
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      for (int64_t br = plan.begin(chunk); br < plan.end(chunk); ++br) {
        int64_t next = out.indptr[br];
        ForEachBlock(indptr, indices, rows, block_h, divide, br, mark, seen, [&](int64_t bc) {
          position[bc] = next;
          out.indices[next++] = static_cast<Index>(bc);
        });
        const int64_t row_end = std::min(rows, (br + 1) * block_h);
        for (int64_t r = br * block_h; r < row_end; ++r) {
          const int64_t row_offset = (r - br * block_h) * block_w;
          for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
            const int64_t c = indices[e], bc = divide(c);
            out.slot[e] = position[bc] * block_size + row_offset + (c - bc * block_w);
          }
        }
      }
    }
  });
  return out;
}

template BsrStructure<int32_t> CsrToBsr<int32_t>(const int32_t*, const int32_t*, int64_t, int64_t, int64_t, int64_t,
                                                  const SparsetirLauncher*);
template BsrStructure<int64_t> CsrToBsr<int64_t>(const int64_t*, const int64_t*, int64_t, int64_t, int64_t, int64_t,
                                                  const SparsetirLauncher*);
template int64_t CountBsrBlocks<int32_t>(const int32_t*, const int32_t*, int64_t, int64_t, int64_t, int64_t,
                                         const SparsetirLauncher*);
template int64_t CountBsrBlocks<int64_t>(const int64_t*, const int64_t*, int64_t, int64_t, int64_t, int64_t,
                                         const SparsetirLauncher*);

}  // namespace sparsetir
