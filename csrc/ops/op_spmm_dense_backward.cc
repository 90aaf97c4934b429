// torch.ops.sparsetir._spmm_dense_backward: the gradient of spmm (reduce sum
// or mean) with respect to its dense operand, grad_dense = A^T grad, where A
// holds the values (sum) or values / row length (mean): one spmm on the
// cached transpose.
//
// Why an operator of its own: the transposed values (values[perm], with the
// mean's row lengths folded in) depend only on the graph and the values. A
// graph's constant values (a GNN's adjacency, a normalization) are permuted
// once and reused at every step, where a formula of torch ops permutes them
// and divides the gradient on every call. The cache stays inside the
// operator: an operator's output must be a fresh tensor (a compiled graph may
// reuse the memory of a dead intermediate), so no cached tensor is returned.
#include "csr_rows.h"
#include "graph_cache.h"
#include "op_checks.h"
#include "ops.h"
#include "values_memo.h"

namespace sparsetir::ops {
namespace {

// values[perm] for reduce "sum"; (values / the row length of each non-zero)[perm]
// for "mean", divided in float32 or float64 and rounded once to the values'
// dtype.
at::Tensor Transposed(const CheckedCsr& csr, const at::Tensor& values, const at::Tensor& perm, bool mean) {
  if (!mean) return values.index_select(0, perm);
  const at::ScalarType wide = ComputeDtype(values.scalar_type());
  std::vector<int64_t> shape(values.dim(), 1);
  shape[0] = -1;
  const at::Tensor lengths = RowLengths(csr.indptr);
  const at::Tensor per_edge = at::repeat_interleave(lengths, lengths, 0, csr.nnz()).to(wide).view(shape);
  return (values.to(wide) / per_edge).to(values.scalar_type()).index_select(0, perm);
}

}  // namespace

at::Tensor SpmmDenseBackward(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                             const at::Tensor& grad, int64_t columns, c10::string_view reduce, bool cache_values) {
  const std::string op = "sparsetir._spmm_dense_backward";
  const std::string how(reduce);
  TORCH_CHECK_VALUE(how == "sum" || how == "mean", op, ": argument 'reduce' must be \"sum\" or \"mean\", got \"", how,
                    "\"");
  TORCH_CHECK_VALUE(columns >= 0, op, ": argument 'columns' must be non-negative, got ", columns);
  CheckedCsr csr = CheckCsr(op, indptr, indices, columns, "argument 'columns'");
  at::Tensor g = CheckFloat(op, "grad", grad, -1);
  at::Tensor a = CheckFloat(op, "values", values, -1);
  TORCH_CHECK_VALUE(g.dim() == 2 || g.dim() == 3, op,
                    ": argument 'grad' must be 2-D (m, K) or 3-D (m, heads, D), got shape ", ShapeString(g.sizes()));
  TORCH_CHECK_VALUE(g.size(0) == csr.rows(), op, ": argument 'grad' must have one row per row of the matrix (",
                    csr.rows(), "), got shape ", ShapeString(g.sizes()));
  TORCH_CHECK_VALUE(a.dim() >= 1 && a.size(0) == csr.nnz(), op,
                    ": argument 'values' must have one row per non-zero (", csr.nnz(), "), got shape ",
                    ShapeString(a.sizes()));
  CheckSameDtype(op, "grad", g, a.scalar_type(), "values");
  CheckSameDevice(op, "values", a, indptr, "indptr");
  CheckSameDevice(op, "grad", g, indptr, "indptr");
  const bool mean = how == "mean";
  const CsrTranspose t = csr.info->Transpose(csr.indptr, csr.indices, columns);
  const auto make = [&] { return Transposed(csr, a, t.perm, mean); };
  at::Tensor transposed;
  if (cache_values) {
    const std::string key = "spmm_dense_backward/" + std::to_string(columns) + "/" + how;
    auto memo = std::static_pointer_cast<ValuesMemo>(
        csr.info->Derived(key, [] { return std::static_pointer_cast<void>(std::make_shared<ValuesMemo>()); }));
    transposed = memo->Get(values, make);
  } else {
    transposed = make();
  }
  return Spmm(t.indptr, t.indices, transposed, g, "sum");
}

}  // namespace sparsetir::ops
