// The plan of SpMM on the hyb form of one structure (op_spmm_hyb.cc): the
// ELL buckets the structure converts into (graph_cache.h, HybFromCsr), how
// each bucket's kernel writes the output, and the rows it must initialize.
// Built once per (structure, columns, parts, max_width) and kept with the
// structure's graph-cache entry; the values scattered into the form's slots
// are kept too, while the same values tensor stays unchanged.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "op_checks.h"
#include "values_memo.h"

namespace sparsetir::ops {

// One ELL bucket: `rows` ELL rows of `width` slots, starting at
// `slot_offset` in the form's flat values.
struct HybBucket {
  int64_t slot_offset = 0;
  int64_t rows = 0;
  int64_t width = 0;
  // How its kernel writes the output (the csrmm_ell_<mode> recipe):
  //  "overwrite": the buckets partition the rows, each ELL row writes its row;
  //  "add":       column parts share rows: each adds into an output zeroed before;
  //  "atomic":    a long row split into several ELL rows of this bucket: atomic adds.
  std::string mode;
  at::Tensor row_map;  // (rows,) the CSR row of each ELL row
  at::Tensor indices;  // (rows * width,) the column of each slot
};

class HybPlan {
 public:
  HybPlan(const HybFromCsr& form, const at::Tensor& empty_rows, int64_t parts);

  const std::vector<HybBucket>& buckets() const { return buckets_; }
  // True when the buckets partition the rows (one part, no row split): the
  // output then needs only its empty rows zeroed (empty_rows()), as the
  // buckets overwrite the others; else it is zeroed and the buckets add.
  bool partition() const { return partition_; }
  const at::Tensor& empty_rows() const { return empty_rows_; }
  // `values` (one per CSR non-zero of the structure `indptr`) scattered into
  // the form's flat slots, padding 0; kept while `values` is the same
  // tensor, unchanged (values_memo.h).
  at::Tensor FlatValues(const at::Tensor& values, const at::Tensor& indptr);

 private:
  at::Tensor slot_;
  int64_t slots_ = 0;
  std::vector<HybBucket> buckets_;
  bool partition_ = false;
  at::Tensor empty_rows_;
  ValuesMemo flat_;  // the last values scattered
};

// The plan of hyb(parts, max_width) for a checked structure with `columns`
// columns; bad parameters are a ValueError that starts with `op`.
std::shared_ptr<HybPlan> HybPlanFor(const std::string& op, const CheckedCsr& csr, int64_t columns, int64_t parts,
                                    int64_t max_width);

}  // namespace sparsetir::ops
