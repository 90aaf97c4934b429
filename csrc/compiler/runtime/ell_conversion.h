// CSR -> ELL and CSR -> hyb conversions of a structure, torch-free.
//
// ELL stores every row in `width` slots (the padded values are 0). hyb(c,
// buckets) is the composable format of the SparseTIR paper: the columns are
// split into `parts` contiguous ranges, and within each part every row goes to
// the ELL bucket of the narrowest power-of-two width that holds its entries in
// that part, so padding stays below 2x per row while each bucket is a regular
// ELL block a kernel can vectorize; rows longer than `max_width` are split
// into several ELL rows of width max_width. Bucketed ELL is hyb with parts = 1.
//
// As with the BSR conversion, values are not copied: every CSR non-zero gets
// its `slot`, its flat position in the padded value array, so values move with
// one scatter (padded = zeros(size); padded[slot] = values) whenever they
// change, while the structure is converted once per graph.
//
// Entries keep their CSR order within an ELL row (columns come out sorted when
// the CSR's are), duplicates included. Padding slots repeat the last real
// column of their ELL row, so a kernel that reads padding (value 0) gathers a
// row already in cache; the padding of an empty ELL row reads column 0 (so a
// matrix without columns has no valid padding column: its ELL width should be
// 0, and hyb never pads an empty row).
//
// Both conversions run their row passes through `launcher` (codegen/abi.h;
// nullptr runs serially); the result does not depend on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/abi.h"

namespace sparsetir {

template <typename Index>
struct EllStructure {
  int64_t rows = 0;            // ELL rows: exactly the CSR rows, empty ones included
  int64_t width = 0;           // slots per row
  std::vector<Index> indices;  // rows * width, row-major: the column of each slot (padding as above)
  std::vector<int64_t> slot;   // per CSR non-zero: its flat position in `indices` (and in the values)
};

// The CSR structure must be valid (ValidateCsr). A row longer than `width`,
// or a negative width, is a UserError (ValueError in Python) that starts with
// `op` and names the first such row and its length.
template <typename Index>
EllStructure<Index> CsrToEll(const std::string& op, const Index* indptr, const Index* indices, int64_t rows,
                             int64_t width, const SparsetirLauncher* launcher);

// Buckets are ordered by (part, width ascending); only non-empty buckets are
// stored. Bucket b holds bucket_rows[b] ELL rows of bucket_width[b] slots:
// its ELL rows are row_map[row_offset[b] .. row_offset[b + 1]) and its slots
// indices[slot_offset[b] .. slot_offset[b + 1]), row-major. Within a bucket
// the ELL rows follow the CSR rows in ascending order, and the pieces of a
// split row are adjacent, in entry order. A CSR row appears once per part in
// which it has entries (more often when split), and not at all if empty: a
// kernel must zero the output rows that no ELL row names.
template <typename Index>
struct HybStructure {
  int64_t parts = 1;                  // column parts requested
  int64_t part_columns = 1;           // ceil(columns / parts), at least 1: part p holds columns
                                      // [p * part_columns, (p + 1) * part_columns)
  int64_t max_width = 1;              // the widest bucket; longer rows are split
  std::vector<int64_t> bucket_part;   // per bucket: its column part
  std::vector<int64_t> bucket_width;  // per bucket: slots per ELL row, a power of two <= max_width
  std::vector<int64_t> bucket_rows;   // per bucket: how many ELL rows it holds
  std::vector<int64_t> row_offset;    // buckets + 1: prefix sums of bucket_rows
  std::vector<int64_t> slot_offset;   // buckets + 1: prefix sums of bucket_rows * bucket_width
  std::vector<Index> row_map;         // per ELL row, over all buckets in order: its CSR row
  std::vector<Index> indices;         // per slot, over all buckets in order: its (global) column
  std::vector<int64_t> slot;          // per CSR non-zero: its flat position in `indices` (and in the values)
  int64_t buckets() const { return static_cast<int64_t>(bucket_part.size()); }
};

// Within a part, a row with L entries goes to the bucket of width = the
// smallest power of two >= L if L <= max_width, else to ceil(L / max_width)
// consecutive ELL rows of the max_width bucket. The CSR structure must be
// valid (ValidateCsr) with every index < columns. parts <= 0, a max_width that
// is not a positive power of two, or columns < 0 is a UserError (ValueError
// in Python) that starts with `op` and names the argument. parts > columns is
// allowed (the parts past the last column stay empty).
template <typename Index>
HybStructure<Index> CsrToHyb(const std::string& op, const Index* indptr, const Index* indices, int64_t rows,
                             int64_t columns, int64_t parts, int64_t max_width, const SparsetirLauncher* launcher);

}  // namespace sparsetir
