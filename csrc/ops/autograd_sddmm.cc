// The autograd kernel of sparsetir::sddmm (why autograd is C++:
// sparsetir_torch/ops.py, "autograd").
//
// Gradients (out[e] = v[e] * dot(x[i], y[j]) for non-zero e = (i, j), v = 1
// without values), with g = grad * v:
//   grad_values = grad * dot(x[i], y[j])  (an sddmm without values),
//   grad_x      = spmm(pattern, g, y),
//   grad_y      = spmm(transposed pattern, g permuted, x).
// The backward calls the operators through the dispatcher, so it is itself
// differentiable and traceable by torch.compile.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "dispatched_ops.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class SddmmFunction : public torch::autograd::Function<SddmmFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const std::optional<at::Tensor>& values, const at::Tensor& x, const at::Tensor& y) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallSddmm(indptr, indices, values, x, y);
    }
    // An undefined tensor stands for "no values" among the saved ones.
    ctx->save_for_backward({indptr, indices, values.has_value() ? *values : at::Tensor(), x, y});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &indptr = saved[0], &indices = saved[1], &values = saved[2], &x = saved[3], &y = saved[4];
    const at::Tensor& grad = grads[0];
    const at::Tensor g = values.defined() ? grad * values : grad;
    at::Tensor grad_values, grad_x, grad_y;
    // needs_input_grad counts tensor inputs only: without values, x and y
    // are inputs 2 and 3.
    const size_t first = values.defined() ? 3 : 2;
    if (values.defined() && ctx->needs_input_grad(2)) grad_values = grad * CallSddmm(indptr, indices, std::nullopt, x, y);
    if (ctx->needs_input_grad(first)) grad_x = CallSpmm(indptr, indices, g, y, "sum");
    if (ctx->needs_input_grad(first + 1)) {
      auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, y.sym_size(0));
      grad_y = CallSpmm(t_indptr, t_indices, g.index_select(0, perm), x, "sum");
    }
    return {at::Tensor(), at::Tensor(), grad_values, grad_x, grad_y};
  }
};

at::Tensor SddmmAutograd(const at::Tensor& indptr, const at::Tensor& indices, const std::optional<at::Tensor>& values,
                         const at::Tensor& x, const at::Tensor& y) {
  return SddmmFunction::apply(indptr, indices, values, x, y);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) { m.impl("sddmm", &sparsetir::ops::SddmmAutograd); }
