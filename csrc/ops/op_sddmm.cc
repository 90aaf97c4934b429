// torch.ops.sparsetir.sddmm: a value per non-zero e = (i, j) from row i of x
// and row j of y, times values[e] when given:
//   op="dot": x[i] . y[j] (x (m, D), y (n, D): out (nnz,)), or per head with
//             x (m, H, D), y (n, H, D): out (nnz, H);
//   op="add": x[i] + y[j], op="mul": x[i] * y[j], element-wise over any
//             trailing shape F (x (m, *F), y (n, *F): out (nnz, *F)).
// values are (nnz,) (broadcast over the trailing dimensions) or of the
// output's shape.
#include "csr_kernels.h"
#include "graph_cache.h"
#include "kernel_library.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {
namespace {

// The product of the trailing dimensions of `t` (1 for a 1-D tensor).
int64_t TrailingSize(const at::Tensor& t) {
  int64_t size = 1;
  for (int64_t d = 1; d < t.dim(); ++d) size *= t.size(d);
  return size;
}

void CheckDotShapes(const std::string& op, const at::Tensor& x, const at::Tensor& y) {
  TORCH_CHECK_VALUE(x.dim() == 2 || x.dim() == 3, op, ": argument 'x' must be 2-D (m, D) or, per head, 3-D ",
                    "(m, heads, D) with op=\"dot\", got shape ", ShapeString(x.sizes()));
  TORCH_CHECK_VALUE(y.dim() == x.dim(), op, ": argument 'y' must be ", x.dim(), "-D like 'x' ",
                    ShapeString(x.sizes()), ", got shape ", ShapeString(y.sizes()));
  TORCH_CHECK_VALUE(x.sizes().slice(1) == y.sizes().slice(1), op, ": arguments 'x' ", ShapeString(x.sizes()),
                    " and 'y' ", ShapeString(y.sizes()), " must have the same number of ",
                    x.dim() == 2 ? "columns" : "heads and columns");
}

void CheckElementwiseShapes(const std::string& op, const std::string& how, const at::Tensor& x,
                            const at::Tensor& y) {
  TORCH_CHECK_VALUE(x.dim() >= 1 && y.dim() == x.dim() && x.sizes().slice(1) == y.sizes().slice(1), op, ": op=\"",
                    how, "\" takes 'x' (m, *F) and 'y' (n, *F) of one trailing shape F, got ",
                    ShapeString(x.sizes()), " and ", ShapeString(y.sizes()));
}

// The row segment length of the cuda sddmm of x (2-D, or 3-D per head), or
// 0 where the fused loop over the non-zeros runs (the CPU, narrow rows, no
// work).
int64_t DotSegmentLength(const CheckedCsr& csr, const at::Tensor& x) {
  const std::string recipe = x.dim() == 2 ? "sddmm_segments" : "sddmm_heads_segments";
  const int64_t feat = x.size(x.dim() - 1);
  if (csr.nnz() == 0 || x.numel() == 0 || !TargetFor(x, recipe).is_cuda()) return 0;
  return CudaSddmmSegmentLength(feat);
}

// What the dot product runs on the cpu for this structure with x (m, *F)
// and y of `y_rows` rows: the gathers' prefetch, and the lanes of the kernel
// that computes four of a row's dot products at a time (0: one at a time).
SddmmCpuPlan PlanDot(const CheckedCsr& csr, const at::Tensor& x, int64_t y_rows) {
  const int64_t row_bytes = TrailingSize(x) * x.element_size();
  return {GatherPrefetchFor(csr, y_rows, row_bytes),
          SddmmGroupLanesFor(x, TargetFor(x, "sddmm"), GathersStayCached(csr, y_rows, row_bytes))};
}

at::Tensor Dot(const CheckedCsr& csr, const at::Tensor& x, const at::Tensor& y) {
  std::vector<int64_t> shape = {csr.nnz()};
  if (x.dim() == 3) shape.push_back(x.size(1));  // per head
  at::Tensor out = EmptyOutput(shape, x.options());
  if (const int64_t segment = DotSegmentLength(csr, x); segment > 0) {
    const RowSegments segments = csr.info->Segments(csr.indptr, segment);
    RunSddmmSegments(segments.row, segments.ptr, csr.indices, x, y, out);
    return out;
  }
  const SddmmCpuPlan plan = PlanDot(csr, x, y.size(0));
  if (x.dim() == 2) {
    RunSddmmDot(csr.indptr, csr.indices, x, y, out, plan.prefetch, plan.group_lanes);
  } else {
    RunSddmmHeads(csr.indptr, csr.indices, x, y, out, plan.prefetch);
  }
  return out;
}

at::Tensor Elementwise(const std::string& how, const CheckedCsr& csr, const at::Tensor& x, const at::Tensor& y) {
  const int64_t feat = TrailingSize(x);
  std::vector<int64_t> shape = {csr.nnz()};
  for (int64_t d = 1; d < x.dim(); ++d) shape.push_back(x.size(d));
  at::Tensor out = EmptyOutput(shape, x.options());
  if (feat > 0) {
    const GatherPrefetch prefetch = GatherPrefetchFor(csr, y.size(0), feat * y.element_size());
    RunSddmmElementwise(how, csr.indptr, csr.indices, x.reshape({x.size(0), feat}), y.reshape({y.size(0), feat}),
                        out.view({csr.nnz(), feat}), prefetch);
  }
  return out;
}

// out * values, values (nnz,) broadcast over out's trailing dimensions or of
// out's shape.
void Scale(const std::string& op, at::Tensor& out, const at::Tensor& values, const at::Tensor& indptr) {
  at::Tensor v = CheckFloat(op, "values", values, -1);
  CheckSameDtype(op, "values", v, out.scalar_type(), "x");
  CheckSameDevice(op, "values", v, indptr, "indptr");
  const bool per_nonzero = v.dim() == 1 && v.size(0) == out.size(0);
  TORCH_CHECK_VALUE(per_nonzero || v.sizes() == out.sizes(), op, ": argument 'values' must have one element per "
                    "non-zero (", out.size(0), ") or the output's shape ", ShapeString(out.sizes()), ", got shape ",
                    ShapeString(v.sizes()));
  if (per_nonzero && out.dim() > 1) {
    std::vector<int64_t> shape(out.dim(), 1);
    shape[0] = v.size(0);
    out.mul_(v.view(shape));
  } else {
    out.mul_(v);
  }
}

}  // namespace

at::Tensor Sddmm(const at::Tensor& indptr, const at::Tensor& indices, const std::optional<at::Tensor>& values,
                 const at::Tensor& x, const at::Tensor& y, c10::string_view op_name) {
  const std::string op = "sparsetir.sddmm";
  const std::string how(op_name);
  TORCH_CHECK_VALUE(how == "dot" || how == "add" || how == "mul", op,
                    ": argument 'op' must be one of \"dot\", \"add\", \"mul\", got \"", how, "\"");
  at::Tensor xc = CheckFloat(op, "x", x, -1);
  at::Tensor yc = CheckFloat(op, "y", y, -1);
  CheckSameDtype(op, "y", yc, xc.scalar_type(), "x");
  if (how == "dot") {
    CheckDotShapes(op, xc, yc);
  } else {
    CheckElementwiseShapes(op, how, xc, yc);
  }
  CheckSameDevice(op, "x", xc, indptr, "indptr");
  CheckSameDevice(op, "y", yc, indptr, "indptr");
  CheckedCsr csr = CheckCsr(op, indptr, indices, yc.size(0), "y.size(0)");
  TORCH_CHECK_VALUE(csr.rows() == xc.size(0), op, ": argument 'x' must have one row per row of the pattern (",
                    csr.rows(), ", from 'indptr'), got shape ", ShapeString(xc.sizes()));
  at::Tensor out = how == "dot" ? Dot(csr, xc, yc) : Elementwise(how, csr, xc, yc);
  if (values.has_value()) Scale(op, out, *values, indptr);
  return out;
}

SddmmCpuPlan SddmmCpuPlanFor(const at::Tensor& indptr, const at::Tensor& indices, int64_t columns, int64_t feat,
                             at::ScalarType dtype) {
  CheckedCsr csr = CheckCsr("sparsetir.sddmm_cpu_plan", indptr, indices, columns, "argument 'columns'");
  return PlanDot(csr, at::empty({0, feat}, at::TensorOptions().dtype(dtype)), columns);
}

}  // namespace sparsetir::ops
