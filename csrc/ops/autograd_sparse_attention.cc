// The autograd kernels of sparsetir::sparse_attention and of its backward
// sparsetir::_sparse_attention_backward (why autograd is C++:
// sparsetir_torch/ops.py, "autograd").
//
// The gradients of q, k and v come from one fused kernel
// (_sparse_attention_backward, from q, k, v, the saved output, each row's
// log-sum-exp that the forward (_sparse_attention_forward) saved, and the
// incoming gradient). That kernel has no backward of its own: a second derivative
// says so instead of being silently zero.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "dispatched_ops.h"
#include "no_gradient_flows.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class SparseAttentionFunction : public torch::autograd::Function<SparseAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            std::optional<double> scale) {
    at::Tensor out, lse;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      std::tie(out, lse) = CallSparseAttentionForward(indptr, indices, q, k, v, scale);
    }
    ctx->saved_data["scale"] = scale;
    ctx->save_for_backward({indptr, indices, q, k, v, out, lse});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const std::optional<double> scale = ctx->saved_data["scale"].toOptional<double>();
    auto [dq, dk, dv] = CallSparseAttentionBackward(saved[0], saved[1], saved[2], saved[3], saved[4], saved[5],
                                                    grads[0], scale, saved[6]);
    // One kernel gives all three; only the needed ones are handed on.
    return {at::Tensor(),
            at::Tensor(),
            ctx->needs_input_grad(2) ? dq : at::Tensor(),
            ctx->needs_input_grad(3) ? dk : at::Tensor(),
            ctx->needs_input_grad(4) ? dv : at::Tensor(),
            at::Tensor()};
  }
};

class SparseAttentionBackwardFunction : public torch::autograd::Function<SparseAttentionBackwardFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                               const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& out,
                               const at::Tensor& grad_out, std::optional<double> scale,
                               const std::optional<at::Tensor>& lse) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [dq, dk, dv] = CallSparseAttentionBackward(indptr, indices, q, k, v, out, grad_out, scale, lse);
    return {dq, dk, dv};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TORCH_CHECK(false,
                "sparsetir.sparse_attention: second derivatives are not supported "
                "(sparsetir._sparse_attention_backward has no backward)");
    return {};
  }
};

at::Tensor SparseAttentionAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q,
                                   const at::Tensor& k, const at::Tensor& v, std::optional<double> scale) {
  if (NoGradientFlows({q, k, v})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallSparseAttention(indptr, indices, q, k, v, scale);
  }
  return SparseAttentionFunction::apply(indptr, indices, q, k, v, scale);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> SparseAttentionBackwardAutograd(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const at::Tensor& out, const at::Tensor& grad_out, std::optional<double> scale,
    const std::optional<at::Tensor>& lse) {
  variable_list grads = SparseAttentionBackwardFunction::apply(indptr, indices, q, k, v, out, grad_out, scale, lse);
  return {grads[0], grads[1], grads[2]};
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) {
  m.impl("sparse_attention", &sparsetir::ops::SparseAttentionAutograd);
  m.impl("_sparse_attention_backward", &sparsetir::ops::SparseAttentionBackwardAutograd);
}
