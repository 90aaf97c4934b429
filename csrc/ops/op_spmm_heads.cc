// torch.ops.sparsetir.spmm with a head dimension: dense (n, H, D) gives
// out (m, H, D). With per-head values (nnz, H) every head has its own edge
// weights (a GAT layer's attention) and one kernel (kernels/csrmm_heads.py)
// runs all heads in one pass over the structure, reading each gathered row
// dense[j] whole; with values (nnz,) the heads share the weights and the
// product is the 2-D SpMM of dense viewed as (n, H * D).
#include "csr_kernels.h"
#include "graph_cache.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {

at::Tensor SpmmHeads(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                     const at::Tensor& dense, const std::string& how) {
  const std::string op = "sparsetir.spmm";
  at::Tensor b = CheckFloat(op, "dense", dense, 3);
  at::Tensor a = CheckFloat(op, "values", values, -1);
  TORCH_CHECK_VALUE(a.dim() == 1 || a.dim() == 2, op,
                    ": argument 'values' must be (nnz,) or (nnz, heads) with a 3-D 'dense' (n, heads, D), got shape ",
                    ShapeString(a.sizes()));
  const int64_t n = b.size(0), heads = b.size(1), feat = b.size(2);
  if (a.dim() == 1) {
    at::Tensor out = Spmm(indptr, indices, a, b.reshape({n, heads * feat}), how);
    return out.view({out.size(0), heads, feat});
  }
  CheckSameDtype(op, "dense", b, a.scalar_type(), "values");
  CheckSameDevice(op, "values", a, indptr, "indptr");
  CheckSameDevice(op, "dense", b, indptr, "indptr");
  CheckedCsr csr = CheckCsr(op, indptr, indices, n, "dense.size(0)");
  TORCH_CHECK_VALUE(a.size(0) == csr.nnz() && a.size(1) == heads, op,
                    ": argument 'values' must be (nnz, heads) = (", csr.nnz(), ", ", heads, ") for 'dense' ",
                    ShapeString(b.sizes()), ", got shape ", ShapeString(a.sizes()));
  TORCH_CHECK_VALUE(how == "sum" || how == "mean", op, ": per-head values (nnz, heads) take reduce=\"sum\" or \"mean\", "
                    "got \"", how, "\" (a max or min runs one head at a time: spmm(indptr, indices, values[:, h], "
                    "dense[:, h], reduce))");
  at::Tensor out = EmptyOutput({csr.rows(), heads, feat}, b.options());
  const int64_t row_bytes = heads * feat * b.element_size();
  RunCsrmmHeads(csr.indptr, csr.indices, a, b, out, GatherPrefetchFor(csr, n, row_bytes));
  if (how == "mean" && out.numel() > 0) {
    // As the 2-D mean: 16-bit outputs divide in float32.
    out.div_(csr.info->MeanDivisors(csr.indptr, ComputeDtype(a.scalar_type())).unsqueeze(2));
  }
  return out;
}

}  // namespace sparsetir::ops
