// torch.ops.sparsetir.edge_softmax: the softmax of per-edge scores over each
// row's non-zeros of a CSR structure (a GAT layer's attention coefficients),
// with an optional trailing head dimension: scores (nnz,) or (nnz, H). Every
// head runs in one kernel (kernels/edge_softmax.py); float16 and bfloat16
// scores are computed in float32, as the exponentials and row sums need its
// range.
#include <limits>

#include "kernel_library.h"
#include "op_checks.h"
#include "ops.h"
#include "output_alloc.h"

namespace sparsetir::ops {
namespace {

struct EdgeScores {
  CheckedCsr csr;
  at::Tensor values;  // (nnz, heads) in the compute dtype
  int64_t heads;
};

// `scores` of shape (nnz,) or (nnz, H) over the structure; the structure's
// column bound is whatever its largest index is (the kernel only reads the
// row extents).
EdgeScores CheckEdgeScores(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices,
                           const at::Tensor& scores, const char* name) {
  at::Tensor s = CheckFloat(op, name, scores, -1);
  TORCH_CHECK_VALUE(s.dim() == 1 || s.dim() == 2, op, ": argument '", name,
                    "' must be 1-D (nnz,) or 2-D (nnz, heads), got shape ", ShapeString(s.sizes()));
  CheckSameDevice(op, name, s, indptr, "indptr");
  CheckedCsr csr = CheckCsr(op, indptr, indices, std::numeric_limits<int64_t>::max(), "any");
  TORCH_CHECK_VALUE(s.size(0) == csr.nnz(), op, ": argument '", name, "' must have one row per non-zero (",
                    csr.nnz(), ", from 'indices'), got shape ", ShapeString(s.sizes()));
  const int64_t heads = s.dim() == 2 ? s.size(1) : 1;
  return {csr, s.reshape({csr.nnz(), heads}).to(ComputeDtype(s.scalar_type())).contiguous(), heads};
}

KernelRequest Request(const char* script, const EdgeScores& e) {
  return {script, script, e.values.scalar_type(), e.csr.indptr.scalar_type(), {{"heads", e.heads}},
          GatherPrefetch::kToL1,
          TargetFor(e.values, script)};
}

}  // namespace

at::Tensor EdgeSoftmax(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& scores) {
  const std::string op = "sparsetir.edge_softmax";
  EdgeScores e = CheckEdgeScores(op, indptr, indices, scores, "scores");
  const int64_t rows = e.csr.rows(), nnz = e.csr.nnz();
  at::Tensor probs = EmptyOutput(e.values.sizes(), e.values.options());
  if (probs.numel() > 0) {
    at::Tensor row_max = at::empty({rows, e.heads}, e.values.options());
    at::Tensor row_sum = at::empty({rows, e.heads}, e.values.options());
    auto kernel = GetOpKernel(Request("edge_softmax", e));
    KernelCall(*kernel)
        .Set("scores", e.values).Set("probs", probs).Set("row_max", row_max).Set("row_sum", row_sum)
        .Set("indptr", e.csr.indptr).Set("indices", e.csr.indices)
        .Set("m", rows).Set("n", e.csr.info->summary().max_index + 1).Set("nnz", nnz).Set("heads", e.heads)
        .Run(8 * probs.numel());
  }
  return probs.reshape(scores.sizes()).to(scores.scalar_type());
}

at::Tensor EdgeSoftmaxBackward(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& out,
                               const at::Tensor& grad) {
  const std::string op = "sparsetir._edge_softmax_backward";
  EdgeScores p = CheckEdgeScores(op, indptr, indices, out, "out");
  at::Tensor g = CheckFloat(op, "grad", grad, -1);
  CheckSameDevice(op, "grad", g, indptr, "indptr");
  TORCH_CHECK_VALUE(g.sizes() == out.sizes(), op, ": argument 'grad' must have the shape of 'out' ",
                    ShapeString(out.sizes()), ", got ", ShapeString(g.sizes()));
  at::Tensor gc = g.reshape(p.values.sizes()).to(p.values.scalar_type()).contiguous();
  at::Tensor grad_scores = EmptyOutput(p.values.sizes(), p.values.options());
  if (grad_scores.numel() > 0) {
    at::Tensor row_dot = at::empty({p.csr.rows(), p.heads}, p.values.options());
    auto kernel = GetOpKernel(Request("edge_softmax_backward", p));
    KernelCall(*kernel)
        .Set("probs", p.values).Set("grad_probs", gc).Set("grad_scores", grad_scores).Set("row_dot", row_dot)
        .Set("indptr", p.csr.indptr).Set("indices", p.csr.indices)
        .Set("m", p.csr.rows()).Set("n", p.csr.info->summary().max_index + 1).Set("nnz", p.csr.nnz())
        .Set("heads", p.heads)
        .Run(4 * grad_scores.numel());
  }
  return grad_scores.reshape(out.sizes()).to(out.scalar_type());
}

}  // namespace sparsetir::ops
