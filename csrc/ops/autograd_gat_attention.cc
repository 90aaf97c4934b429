// The autograd kernels of sparsetir::gat_attention and of its backward helper
// sparsetir::_gat_attention_backward (why autograd is C++:
// sparsetir_torch/ops.py, "autograd"). The forward keeps the attention
// probabilities the kernel computed; the backward (op_gat_attention.cc) reuses
// them instead of recomputing the softmax.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "dispatched_ops.h"
#include "no_gradient_flows.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class GatAttentionFunction : public torch::autograd::Function<GatAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& a_dst, const at::Tensor& a_src, const at::Tensor& x,
                            double negative_slope) {
    at::Tensor out, probs;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      std::tie(out, probs) = CallGatAttentionForward(indptr, indices, a_dst, a_src, x, negative_slope);
    }
    ctx->saved_data["negative_slope"] = negative_slope;
    ctx->save_for_backward({indptr, indices, a_dst, a_src, x, probs});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto [grad_dst, grad_src, grad_x] = CallGatAttentionBackward(
        saved[0], saved[1], saved[2], saved[3], saved[4], saved[5], grads[0].contiguous(),
        ctx->saved_data["negative_slope"].toDouble());
    return {at::Tensor(), at::Tensor(), ctx->needs_input_grad(2) ? grad_dst : at::Tensor(),
            ctx->needs_input_grad(3) ? grad_src : at::Tensor(), ctx->needs_input_grad(4) ? grad_x : at::Tensor(),
            at::Tensor()};
  }
};

// The backward helper runs the first derivatives only: the probabilities it
// is given carry no history, so a second derivative says so instead of being
// silently incomplete.
class GatAttentionBackwardFunction : public torch::autograd::Function<GatAttentionBackwardFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                               const at::Tensor& a_dst, const at::Tensor& a_src, const at::Tensor& x,
                               const at::Tensor& probs, const at::Tensor& grad_out, double negative_slope) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [grad_dst, grad_src, grad_x] =
        CallGatAttentionBackward(indptr, indices, a_dst, a_src, x, probs, grad_out, negative_slope);
    return {grad_dst, grad_src, grad_x};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TORCH_CHECK(false,
                "sparsetir.gat_attention: second derivatives are not supported "
                "(sparsetir._gat_attention_backward has no backward)");
    return {};
  }
};

at::Tensor GatAttentionAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& a_dst,
                                const at::Tensor& a_src, const at::Tensor& x, double negative_slope) {
  if (NoGradientFlows({a_dst, a_src, x})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return std::get<0>(CallGatAttentionForward(indptr, indices, a_dst, a_src, x, negative_slope));
  }
  return GatAttentionFunction::apply(indptr, indices, a_dst, a_src, x, negative_slope);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> GatAttentionBackwardAutograd(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& a_dst, const at::Tensor& a_src,
    const at::Tensor& x, const at::Tensor& probs, const at::Tensor& grad_out, double negative_slope) {
  variable_list grads =
      GatAttentionBackwardFunction::apply(indptr, indices, a_dst, a_src, x, probs, grad_out, negative_slope);
  return {grads[0], grads[1], grads[2]};
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) {
  m.impl("gat_attention", &sparsetir::ops::GatAttentionAutograd);
  m.impl("_gat_attention_backward", &sparsetir::ops::GatAttentionBackwardAutograd);
}
