// torch.ops.sparsetir._spmm_hyb: out = A @ dense with A's structure run in
// the hyb(parts, max_width) form (runtime/ell_conversion.h), the form the
// format choice of st.spmm (sparsetir_torch/tuning.py) may pick for a graph
// with skewed row lengths. A takes CSR arguments as spmm does; the form, its
// bucket plan and the scattered values are derived here and cached
// (hyb_plan.h), so the op traces under torch.compile like spmm. Each ELL
// bucket runs the kernel of the csrmm_ell_<mode> recipe
// (recipes/cpu_recipes.cc): the compute part of kernels/csrmm.py decomposed
// onto kernels/formats/ell_rows.py. Autograd: autograd_spmm_hyb.cc.
#include "hyb_plan.h"
#include "kernel_library.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"
#include "recipes/cpu_recipes.h"

namespace sparsetir::ops {
namespace {

// Buckets up to this width get a kernel specialized (and fully unrolled) on
// their width; wider ones share one kernel with the width as an argument, so a
// graph with many bucket widths compiles few kernels.
constexpr int64_t kSpecializedWidth = 8;

void RunBucket(const HybBucket& bucket, const at::Tensor& flat_values, const at::Tensor& dense,
               const at::Tensor& out) {
  const int64_t feat = dense.size(1);
  std::map<std::string, int64_t> sizes{{"feat_size", feat}};
  if (bucket.width <= kSpecializedWidth) sizes["width_ell"] = bucket.width;
  auto kernel = GetOpKernel({"csrmm", kEllBucketRecipe + bucket.mode, dense.scalar_type(), bucket.row_map.scalar_type(),
                             sizes, GatherPrefetch::kToL1, Target::HostCpu()});
  const int64_t slots = bucket.rows * bucket.width;
  KernelCall(*kernel)
      .Set("a_ell", flat_values.slice(0, bucket.slot_offset, bucket.slot_offset + slots))
      .Set("b", dense)
      .Set("c", out)
      .Set("row_map_ell", bucket.row_map)
      .Set("indices_ell", bucket.indices)
      .Set("m", out.size(0))
      .Set("n", dense.size(0))
      .Set("feat_size", feat)
      .Set("rows_ell", bucket.rows)
      .Set("width_ell", bucket.width)
      .Run(2 * slots * feat);
}

}  // namespace

at::Tensor SpmmHyb(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                   const at::Tensor& dense, int64_t parts, int64_t max_width) {
  const std::string op = "sparsetir._spmm_hyb";
  at::Tensor b = CheckFloat(op, "dense", dense, 2);
  at::Tensor a = CheckFloat(op, "values", values, 1);
  TORCH_CHECK_VALUE(a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble, op,
                    ": argument 'values' must be float32 or float64, got ", a.scalar_type());
  CheckSameDtype(op, "dense", b, a.scalar_type(), "values");
  CheckSameDevice(op, "values", a, indptr, "indptr");
  CheckSameDevice(op, "dense", b, indptr, "indptr");
  TORCH_CHECK_VALUE(parts > 0, op, ": argument 'parts' must be positive, got ", parts);
  TORCH_CHECK_VALUE(max_width > 0 && (max_width & (max_width - 1)) == 0, op,
                    ": argument 'max_width' must be a positive power of two, got ", max_width);
  CheckedCsr csr = CheckCsr(op, indptr, indices, b.size(0), "dense.size(0)");
  TORCH_CHECK_VALUE(a.numel() == csr.nnz(), op, ": argument 'values' must have one element per non-zero (",
                    csr.nnz(), ", the length of 'indices'), got shape ", ShapeString(a.sizes()));
  CheckSlotCount(op, "max_width", csr.rows() * parts, max_width);
  const int64_t rows = csr.rows(), feat = b.size(1);
  std::shared_ptr<HybPlan> plan = HybPlanFor(op, csr, b.size(0), parts, max_width);
  at::Tensor out = EmptyOutput({rows, feat}, b.options());
  if (plan->partition()) {
    out.index_fill_(0, plan->empty_rows(), 0);  // the buckets write the other rows
  } else {
    out.zero_();  // the buckets add into it
  }
  if (feat == 0 || plan->buckets().empty()) return out;
  at::Tensor flat = plan->FlatValues(a, csr.indptr);
  for (const HybBucket& bucket : plan->buckets()) RunBucket(bucket, flat, b, out);
  return out;
}

}  // namespace sparsetir::ops
