// The autograd kernels of sparsetir::edge_softmax and of its backward
// sparsetir::_edge_softmax_backward, so edge_softmax has second derivatives
// (why autograd is C++: sparsetir_torch/ops.py, "autograd").
//
// P = edge_softmax(S) per row; with G the incoming gradient and
// D = rowsum(P * G) (one value per row and head, broadcast to the row's edges):
//   backward:        dS = P * (G - D)                   (_edge_softmax_backward),
//   double backward: for an incoming gradient GG of dS,
//                    d/dP = GG * (G - D) - G * rowsum(GG * P),
//                    d/dG = P * (GG - rowsum(GG * P)).
// The double backward is written with torch ops (index_add over the row of
// every edge), so it is differentiable again and traceable by torch.compile.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "csr_rows.h"
#include "dispatched_ops.h"
#include "no_gradient_flows.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class EdgeSoftmaxFunction : public torch::autograd::Function<EdgeSoftmaxFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& scores) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallEdgeSoftmax(indptr, indices, scores);
    }
    ctx->save_for_backward({indptr, indices, out});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    at::Tensor grad_scores;
    if (ctx->needs_input_grad(2)) grad_scores = CallEdgeSoftmaxBackward(saved[0], saved[1], saved[2], grads[0]);
    return {at::Tensor(), at::Tensor(), grad_scores};
  }
};

// rowsum(e) of the formulas above: each edge's row total (e is (nnz,) or
// (nnz, heads)).
at::Tensor RowSum(const at::Tensor& indptr, const at::Tensor& rows, const at::Tensor& e) {
  std::vector<c10::SymInt> shape(e.sym_sizes().begin(), e.sym_sizes().end());
  shape[0] = indptr.sym_size(0) - 1;
  return e.new_zeros_symint(shape).index_add_(0, rows, e).index_select(0, rows);
}

class EdgeSoftmaxBackwardFunction : public torch::autograd::Function<EdgeSoftmaxBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& out, const at::Tensor& grad) {
    at::Tensor grad_scores;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      grad_scores = CallEdgeSoftmaxBackward(indptr, indices, out, grad);
    }
    ctx->save_for_backward({indptr, indices, out, grad});
    return grad_scores;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &indptr = saved[0], &indices = saved[1], &out = saved[2], &grad = saved[3];
    const at::Tensor& gg = grads[0];
    const at::Tensor rows = RowIds(indptr, indices);
    const at::Tensor gg_row_sum = RowSum(indptr, rows, gg * out);
    at::Tensor grad_out, grad_grad;
    if (ctx->needs_input_grad(2)) grad_out = gg * (grad - RowSum(indptr, rows, out * grad)) - grad * gg_row_sum;
    if (ctx->needs_input_grad(3)) grad_grad = out * (gg - gg_row_sum);
    return {at::Tensor(), at::Tensor(), grad_out, grad_grad};
  }
};

at::Tensor EdgeSoftmaxAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& scores) {
  if (NoGradientFlows({scores})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallEdgeSoftmax(indptr, indices, scores);
  }
  return EdgeSoftmaxFunction::apply(indptr, indices, scores);
}

at::Tensor EdgeSoftmaxBackwardAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& out,
                                       const at::Tensor& grad) {
  return EdgeSoftmaxBackwardFunction::apply(indptr, indices, out, grad);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) {
  m.impl("edge_softmax", &sparsetir::ops::EdgeSoftmaxAutograd);
  m.impl("_edge_softmax_backward", &sparsetir::ops::EdgeSoftmaxBackwardAutograd);
}
