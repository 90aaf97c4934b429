#include "runtime/ell_conversion.h"

#include <algorithm>

#include "runtime/parallel.h"
#include "support/error.h"

namespace sparsetir {
namespace {

// Rows per task of a parallel pass: enough work to amortize a task, small
// enough to balance power-law rows over a few threads.
constexpr int64_t kRowGrain = 256;
// The hyb passes keep one counter per (row chunk, part, width): at most this
// many, so a large `parts` makes the chunks longer instead of the table huge.
constexpr int64_t kMaxChunkCounters = int64_t{1} << 20;

// Fills slots [from, to) of `slots` with the column before `from`, or with
// column 0 if the ELL row holds no entry (see the header: padding re-reads a
// row already in cache).
template <typename Index>
void Pad(Index* slots, int64_t from, int64_t to) {
  const Index column = from > 0 ? slots[from - 1] : Index{0};
  std::fill(slots + from, slots + to, column);
}

bool IsPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// log2 of the narrowest power-of-two width >= length (length >= 1).
int64_t WidthClass(int64_t length) {
  int64_t k = 0;
  while ((int64_t{1} << k) < length) ++k;
  return k;
}

// The bucket layout of a hyb conversion: where each (part, width class) pair,
// of `classes` classes per part, lands among the non-empty buckets.
struct HybPlan {
  int64_t part_columns = 1, used_parts = 0, classes = 1, max_width = 1;
  int64_t chunk_rows = kRowGrain, chunks = 0;
  std::vector<int64_t> bucket_of;  // per (part, class): its bucket, or -1 if empty

  int64_t Key(int64_t part, int64_t length) const {
    return part * classes + (length > max_width ? classes - 1 : WidthClass(length));
  }
  int64_t Pieces(int64_t length) const { return length > max_width ? (length + max_width - 1) / max_width : 1; }
};

// One task's view of the row being walked, with scratch space per part.
struct RowParts {
  std::vector<int64_t> length;      // per part: the row's entries in it (zero outside `touched`)
  std::vector<int64_t> touched;     // the parts in which the row has entries
  std::vector<int64_t> first_slot;  // fill pass: per touched part, where its entries start
  std::vector<int64_t> placed;      // fill pass: per touched part, entries placed so far
  explicit RowParts(int64_t parts) : length(parts, 0), first_slot(parts), placed(parts) {}
};

// Walks the chunks of rows [chunk * chunk_rows, ...) in parallel and calls
// visit(chunk, row, parts) for every row, `parts` describing that row.
template <typename Index, typename Visit>
void ForEachRowParts(const HybPlan& plan, const Index* indptr, const Index* indices, int64_t rows,
                     const SparsetirLauncher* launcher, const Visit& visit) {
  ParallelFor(launcher, plan.chunks, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
    RowParts row(plan.used_parts);
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      const int64_t row_end = std::min(rows, (chunk + 1) * plan.chunk_rows);
      for (int64_t r = chunk * plan.chunk_rows; r < row_end; ++r) {
        row.touched.clear();
        for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
          const int64_t p = indices[e] / plan.part_columns;
          if (row.length[p]++ == 0) row.touched.push_back(p);
        }
        visit(chunk, r, row);
        for (int64_t p : row.touched) row.length[p] = 0;
      }
    }
  });
}

}  // namespace

template <typename Index>
EllStructure<Index> CsrToEll(const std::string& op, const Index* indptr, const Index* indices, int64_t rows,
                             int64_t width, const SparsetirLauncher* launcher) {
  if (width < 0) ThrowArgumentError(MakeMessage() << op << ": argument 'width' must be non-negative, got " << width);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t length = static_cast<int64_t>(indptr[r + 1]) - indptr[r];
    if (length > width) {
      ThrowArgumentError(MakeMessage() << op << ": row " << r << " has " << length
                                       << " non-zeros, more than the ELL width " << width
                                       << " (argument 'width'); the width must be at least the longest row");
    }
  }
  EllStructure<Index> out;
  out.rows = rows;
  out.width = width;
  out.indices.resize(rows * width);
  out.slot.resize(rows > 0 ? indptr[rows] : 0);
  ParallelFor(launcher, rows, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      Index* slots = out.indices.data() + r * width;
      const int64_t start = indptr[r], length = indptr[r + 1] - start;
      for (int64_t j = 0; j < length; ++j) {
        slots[j] = indices[start + j];
        out.slot[start + j] = r * width + j;
      }
      Pad(slots, length, width);
    }
  });
  return out;
}

template <typename Index>
HybStructure<Index> CsrToHyb(const std::string& op, const Index* indptr, const Index* indices, int64_t rows,
                             int64_t columns, int64_t parts, int64_t max_width, const SparsetirLauncher* launcher) {
  if (parts <= 0) ThrowArgumentError(MakeMessage() << op << ": argument 'parts' must be positive, got " << parts);
  if (!IsPowerOfTwo(max_width)) {
    ThrowArgumentError(MakeMessage() << op << ": argument 'max_width' must be a positive power of two, got "
                                     << max_width);
  }
  if (columns < 0) {
    ThrowArgumentError(MakeMessage() << op << ": argument 'columns' must be non-negative, got " << columns);
  }
  HybStructure<Index> out;
  out.parts = parts;
  out.max_width = max_width;
  out.part_columns = std::max<int64_t>(1, (columns + parts - 1) / parts);

  HybPlan plan;
  plan.part_columns = out.part_columns;
  // Only the parts that hold a column get counters (parts > columns is allowed).
  plan.used_parts = std::min(parts, (columns + plan.part_columns - 1) / plan.part_columns);
  plan.classes = WidthClass(max_width) + 1;
  plan.max_width = max_width;
  const int64_t keys = plan.used_parts * plan.classes;
  const int64_t max_chunks = std::max<int64_t>(1, kMaxChunkCounters / std::max<int64_t>(1, keys));
  plan.chunks = std::min((rows + kRowGrain - 1) / kRowGrain, max_chunks);
  plan.chunk_rows = plan.chunks > 0 ? (rows + plan.chunks - 1) / plan.chunks : kRowGrain;
  plan.chunks = plan.chunk_rows > 0 ? (rows + plan.chunk_rows - 1) / plan.chunk_rows : 0;

  // Count pass: ELL rows per (chunk, part, class).
  std::vector<int64_t> next(plan.chunks * keys, 0);
  ForEachRowParts(plan, indptr, indices, rows, launcher,
                  [&](int64_t chunk, int64_t, RowParts& row) {
                    for (int64_t p : row.touched) {
                      next[chunk * keys + plan.Key(p, row.length[p])] += plan.Pieces(row.length[p]);
                    }
                  });

  // Prefix sums, in bucket order then chunk order: `next` becomes the first
  // ELL row (global, over all buckets) each chunk writes in each bucket.
  plan.bucket_of.assign(keys, -1);
  out.row_offset = {0};
  out.slot_offset = {0};
  for (int64_t key = 0; key < keys; ++key) {
    int64_t total = 0;
    for (int64_t chunk = 0; chunk < plan.chunks; ++chunk) {
      const int64_t count = next[chunk * keys + key];
      next[chunk * keys + key] = out.row_offset.back() + total;
      total += count;
    }
    if (total == 0) continue;
    const int64_t width = int64_t{1} << (key % plan.classes);
    plan.bucket_of[key] = out.buckets();
    out.bucket_part.push_back(key / plan.classes);
    out.bucket_width.push_back(width);
    out.bucket_rows.push_back(total);
    out.row_offset.push_back(out.row_offset.back() + total);
    out.slot_offset.push_back(out.slot_offset.back() + total * width);
  }
  out.row_map.resize(out.row_offset.back());
  out.indices.resize(out.slot_offset.back());
  out.slot.resize(rows > 0 ? indptr[rows] : 0);

  // Fill pass: every row takes its ELL rows from its chunk's counters, then
  // places its entries (in CSR order) and pads the last ELL row of each part.
  ForEachRowParts(plan, indptr, indices, rows, launcher,
                  [&](int64_t chunk, int64_t r, RowParts& row) {
                    for (int64_t p : row.touched) {
                      const int64_t key = plan.Key(p, row.length[p]), b = plan.bucket_of[key];
                      const int64_t pieces = plan.Pieces(row.length[p]);
                      const int64_t first_row = next[chunk * keys + key];
                      next[chunk * keys + key] += pieces;
                      std::fill_n(out.row_map.begin() + first_row, pieces, static_cast<Index>(r));
                      row.first_slot[p] = out.slot_offset[b] + (first_row - out.row_offset[b]) * out.bucket_width[b];
                      row.placed[p] = 0;
                    }
                    // The pieces of a split row are adjacent ELL rows of
                    // max_width slots, so an entry's slot is first_slot plus
                    // its rank among the row's entries in its part.
                    for (int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
                      const int64_t p = indices[e] / plan.part_columns;
                      out.slot[e] = row.first_slot[p] + row.placed[p]++;
                      out.indices[out.slot[e]] = indices[e];
                    }
                    for (int64_t p : row.touched) {
                      const int64_t key = plan.Key(p, row.length[p]);
                      const int64_t width = out.bucket_width[plan.bucket_of[key]];
                      const int64_t last_piece = plan.Pieces(row.length[p]) - 1;
                      Pad(out.indices.data() + row.first_slot[p] + last_piece * width,
                          row.length[p] - last_piece * width, width);
                    }
                  });
  return out;
}

template EllStructure<int32_t> CsrToEll<int32_t>(const std::string&, const int32_t*, const int32_t*, int64_t, int64_t,
                                                 const SparsetirLauncher*);
template EllStructure<int64_t> CsrToEll<int64_t>(const std::string&, const int64_t*, const int64_t*, int64_t, int64_t,
                                                 const SparsetirLauncher*);
template HybStructure<int32_t> CsrToHyb<int32_t>(const std::string&, const int32_t*, const int32_t*, int64_t, int64_t,
                                                 int64_t, int64_t, const SparsetirLauncher*);
template HybStructure<int64_t> CsrToHyb<int64_t>(const std::string&, const int64_t*, const int64_t*, int64_t, int64_t,
                                                 int64_t, int64_t, const SparsetirLauncher*);

}  // namespace sparsetir
