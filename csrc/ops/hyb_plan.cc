#include "hyb_plan.h"

#include "ops.h"

namespace sparsetir::ops {
namespace {

// Whether some ELL row of `row_map` names the same CSR row as the one
// before it: the pieces of a split row are adjacent.
bool RepeatsRows(const at::Tensor& row_map) {
  if (row_map.numel() < 2) return false;
  return (row_map.slice(0, 1) == row_map.slice(0, 0, -1)).any().item<bool>();
}

}  // namespace

HybPlan::HybPlan(const HybFromCsr& form, const at::Tensor& empty_rows, int64_t parts)
    : slot_(form.slot), slots_(form.indices.numel()) {
  const at::Tensor info = form.bucket_info.contiguous();
  const int64_t* fields = info.data_ptr<int64_t>();  // (part, width, ELL rows) per bucket
  int64_t flat = 0, row = 0;
  bool split = false;
  std::vector<bool> repeats;
  for (int64_t b = 0; b < info.size(0); ++b) {
    HybBucket bucket;
    bucket.slot_offset = flat;
    bucket.width = fields[3 * b + 1];
    bucket.rows = fields[3 * b + 2];
    bucket.row_map = form.row_map.slice(0, row, row + bucket.rows);
    bucket.indices = form.indices.slice(0, flat, flat + bucket.rows * bucket.width);
    repeats.push_back(RepeatsRows(bucket.row_map));
    split = split || repeats.back();
    flat += bucket.rows * bucket.width;
    row += bucket.rows;
    buckets_.push_back(std::move(bucket));
  }
  partition_ = parts == 1 && !split;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].mode = partition_ ? "overwrite" : repeats[b] ? "atomic" : "add";
  }
  empty_rows_ = empty_rows;
}

at::Tensor HybPlan::FlatValues(const at::Tensor& values, const at::Tensor& indptr) {
  return flat_.Get(values, [&] { return ScatterBySlot(values, slot_, indptr, slots_, 1); });
}

std::shared_ptr<HybPlan> HybPlanFor(const std::string& op, const CheckedCsr& csr, int64_t columns, int64_t parts,
                                    int64_t max_width) {
  const std::string key =
      "hyb_plan/" + std::to_string(columns) + "/" + std::to_string(parts) + "/" + std::to_string(max_width);
  return std::static_pointer_cast<HybPlan>(csr.info->Derived(key, [&]() -> std::shared_ptr<void> {
    HybFromCsr form = csr.info->Hyb(op, csr.indptr, csr.indices, columns, parts, max_width);
    return std::make_shared<HybPlan>(form, csr.info->EmptyRows(csr.indptr), parts);
  }));
}

}  // namespace sparsetir::ops
