// The autograd kernel of sparsetir::dropout. The gradient of y = x * m / (1 - p)
// for the mask m that the seed draws is g * m / (1 - p): dropout of the
// incoming gradient with the same p and seed. So nothing but the seed is
// saved (torch's dropout keeps a mask of the input's size), and the
// backward, an operator call through the dispatcher, is differentiable again.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "dispatched_ops.h"
#include "no_gradient_flows.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class DropoutFunction : public torch::autograd::Function<DropoutFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, double p, const at::Tensor& seed) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallDropout(input, p, seed);
    }
    ctx->saved_data["p"] = p;
    ctx->save_for_backward({seed});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const double p = ctx->saved_data["p"].toDouble();
    const at::Tensor seed = ctx->get_saved_variables()[0];
    return {CallDropout(grads[0], p, seed), at::Tensor(), at::Tensor()};
  }
};

at::Tensor DropoutAutograd(const at::Tensor& input, double p, const at::Tensor& seed) {
  if (NoGradientFlows({input})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallDropout(input, p, seed);
  }
  return DropoutFunction::apply(input, p, seed);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) { m.impl("dropout", &sparsetir::ops::DropoutAutograd); }
