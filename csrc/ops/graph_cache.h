// The per-graph cache: what the operators learn about a sparse structure
// (indptr, indices) once and reuse on every later call with the same tensors:
// the validation summary, row lengths, transposes for backward passes.
//
// Entries are keyed by the identity of the two index tensors and checked
// against their version counters, data pointers and sizes, so an in-place
// change of either tensor invalidates the entry. Entries hold the tensors
// weakly: a freed structure's entry is dropped at the next insertion. The
// table is bounded (least recently used entries go first) and thread-safe.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "runtime/csr_structure.h"

namespace sparsetir::ops {

// A transposed structure: t_indptr (columns + 1), t_indices (nnz) and perm
// (nnz), with values_t = values[perm].
struct CsrTranspose {
  at::Tensor indptr;
  at::Tensor indices;
  at::Tensor perm;
};

// A BSR structure derived from a CSR one: indptr (block rows + 1), indices
// (nnzb) and slot (nnz): the flat position of each CSR non-zero in the
// (nnzb, block_h, block_w) blocks array.
struct BsrFromCsr {
  at::Tensor indptr;
  at::Tensor indices;
  at::Tensor slot;
};

// An ELL structure derived from a CSR one: indices (rows, width), padding as
// in runtime/ell_conversion.h, and slot (nnz, int64): the flat position of
// each CSR non-zero in the (rows, width) values.
struct EllFromCsr {
  at::Tensor indices;
  at::Tensor slot;
};

// A hyb(parts, max_width) structure derived from a CSR one (layout in
// runtime/ell_conversion.h): bucket_info (buckets, 3) int64 rows of (part,
// width, ELL rows); row_map (ELL rows) and indices (slots), both of the index
// dtype, concatenated over the buckets; slot (nnz, int64): the flat position
// of each CSR non-zero in the padded values, laid out as `indices`.
struct HybFromCsr {
  at::Tensor bucket_info;
  at::Tensor row_map;
  at::Tensor indices;
  at::Tensor slot;
};

// A CSR structure's rows cut into segments of at most `length` non-zeros
// (kernels/csrmm_segments.py): segment s holds the CSR positions
// ptr[s] .. ptr[s + 1] of row row[s]; empty rows have no segment. The rows
// cut in two or more are `split_rows` (int64, ascending), and slot[s] is the
// place of segment s's row among them, or -1 where the segment is its row's
// only one; `empty_rows` (int64) have no segment. All on the structure's
// device; row, ptr and slot of the index dtype.
struct RowSegments {
  at::Tensor row;         // (segments,)
  at::Tensor ptr;         // (segments + 1,)
  at::Tensor slot;        // (segments,)
  at::Tensor split_rows;  // (rows cut in several segments,)
  at::Tensor empty_rows;  // (rows without non-zeros,)
};

// What is known about one validated structure.
class GraphInfo {
 public:
  explicit GraphInfo(CsrSummary summary) : summary_(summary) {}

  const CsrSummary& summary() const { return summary_; }
  // The digest of the arrays this entry was built from (revalidation.h); 0
  // when the entry was made without the re-check.
  uint64_t digest() const { return digest_; }
  void set_digest(uint64_t digest) { digest_ = digest; }
  // The rows without non-zeros (int64), for the max / min reductions, of
  // the structure whose indptr the caller passes again (built on first use:
  // a graph that only ever runs sums costs no torch operation here).
  at::Tensor EmptyRows(const at::Tensor& indptr);
  // Row lengths (at least 1) as a (rows, 1) column of `dtype`: mean = the
  // row's sum divided by it. Dividing the sum, rather than scaling each value
  // by 1 / length before the product, keeps tiny values from underflowing
  // where their mean is representable (torch divides the sum too). Built on
  // first use per dtype, like EmptyRows.
  at::Tensor MeanDivisors(const at::Tensor& indptr, at::ScalarType dtype);
  // CountNearGathers of the structure whose (host) indptr and indices the
  // caller passes again, counted on first use.
  std::array<int64_t, kNearBits> NearGathers(const at::Tensor& indptr, const at::Tensor& indices);
  // The transpose for `columns` columns (built once per column count) of the
  // structure this entry describes, passed again by the caller: the entry
  // itself holds no reference to it, so freeing the structure frees the entry.
  CsrTranspose Transpose(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns);
  // The place of every non-zero in that transpose: position[perm[p]] = p,
  // so that an edge tensor computed in the transpose's order returns to the
  // structure's order as a gather (built once per column count).
  at::Tensor TransposePositions(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns);
  // The row segments of at most `length` (> 0) non-zeros (built once per
  // length) of the structure whose indptr the caller passes again.
  RowSegments Segments(const at::Tensor& indptr, int64_t length);
  // The BSR(block_h, block_w) form of the structure (built once per shape).
  BsrFromCsr Bsr(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t block_h,
                 int64_t block_w);
  // The ELL form with `width` slots per row (built once per width). A row
  // longer than `width` is a ValueError that starts with `op`.
  EllFromCsr Ell(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices, int64_t width);
  // The hyb(parts, max_width) form for `columns` columns (built once per
  // parameters); bad parameters are a ValueError that starts with `op`.
  HybFromCsr Hyb(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices, int64_t columns,
                 int64_t parts, int64_t max_width);
  // State an operator builds from this structure once (a plan of kernel
  // calls), kept under `key` while the entry lives. `make` runs outside the
  // entry's lock, as it may ask for the forms above; when two threads build
  // the same key at once, the first stored wins.
  std::shared_ptr<void> Derived(const std::string& key, const std::function<std::shared_ptr<void>()>& make);

 private:
  CsrSummary summary_;
  uint64_t digest_ = 0;
  at::Tensor empty_rows_;  // undefined until EmptyRows
  std::map<at::ScalarType, at::Tensor> mean_divisors_;
  std::optional<std::array<int64_t, kNearBits>> near_gathers_;
  std::mutex mutex_;
  std::map<int64_t, CsrTranspose> transposes_;
  std::map<int64_t, RowSegments> segments_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, BsrFromCsr> bsr_;
  std::map<int64_t, EllFromCsr> ell_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, HybFromCsr> hyb_;
  std::map<std::string, std::shared_ptr<void>> derived_;
};

struct GraphCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
};

// Validates (indptr, indices) for `op` on first sight and returns what is
// known about them. `op` prefixes every error. Tensors must already be
// contiguous, on the CPU, 1-D, of one index dtype.
std::shared_ptr<GraphInfo> ValidatedGraph(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices);

GraphCacheStats GetGraphCacheStats();
void ClearGraphCache();
// The most entries kept (default 128).
void SetGraphCacheCapacity(int64_t capacity);

}  // namespace sparsetir::ops
