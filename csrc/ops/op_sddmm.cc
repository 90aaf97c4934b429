// torch.ops.sparsetir.sddmm: out[e] = (values[e] if given else 1) *
// dot(x[i, :], y[j, :]) for every non-zero e = (i, j).
#include "csr_kernels.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {

at::Tensor Sddmm(const at::Tensor& indptr, const at::Tensor& indices, const std::optional<at::Tensor>& values,
                 const at::Tensor& x, const at::Tensor& y) {
  const std::string op = "sparsetir.sddmm";
  at::Tensor xc = CheckFloat(op, "x", x, 2);
  at::Tensor yc = CheckFloat(op, "y", y, 2);
  CheckSameDtype(op, "y", yc, xc.scalar_type(), "x");
  TORCH_CHECK_VALUE(xc.size(1) == yc.size(1), op, ": arguments 'x' ", ShapeString(xc.sizes()), " and 'y' ",
                    ShapeString(yc.sizes()), " must have the same number of columns");
  CheckSameDevice(op, "x", xc, indptr, "indptr");
  CheckSameDevice(op, "y", yc, indptr, "indptr");
  CheckedCsr csr = CheckCsr(op, indptr, indices, yc.size(0), "y.size(0)");
  TORCH_CHECK_VALUE(csr.rows() == xc.size(0), op, ": argument 'x' must have one row per row of the pattern (",
                    csr.rows(), ", from 'indptr'), got shape ", ShapeString(xc.sizes()));
  at::Tensor out = EmptyOutput({csr.nnz()}, xc.options());
  RunSddmmDot(csr.indptr, csr.indices, xc, yc, out, PrefetchPays(csr.info->summary(), yc));
  if (values.has_value()) {
    at::Tensor v = CheckFloat(op, "values", *values, 1);
    CheckSameDtype(op, "values", v, xc.scalar_type(), "x");
    CheckSameDevice(op, "values", v, indptr, "indptr");
    TORCH_CHECK_VALUE(v.numel() == csr.nnz(), op, ": argument 'values' must have one element per non-zero (",
                      csr.nnz(), "), got shape ", ShapeString(v.sizes()));
    out.mul_(v);
  }
  return out;
}

}  // namespace sparsetir::ops
