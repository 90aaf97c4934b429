// The autograd kernel of sparsetir::_spmm_hyb, in C++ like spmm's
// (autograd_spmm.cc). The hyb form is only how the forward pass runs the
// structure: out = A @ dense as spmm (sum) computes it, so the gradients are
// spmm's, built from the CSR operators: grad_values = sddmm(grad, dense) and
// grad_dense = spmm on the cached transpose. They go through the dispatcher,
// so the backward is itself differentiable and traceable by torch.compile.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "dispatched_ops.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class SpmmHybFunction : public torch::autograd::Function<SpmmHybFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& values, const at::Tensor& dense, int64_t parts, int64_t max_width) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallSpmmHyb(indptr, indices, values, dense, parts, max_width);
    }
    ctx->save_for_backward({indptr, indices, values, dense});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &indptr = saved[0], &indices = saved[1], &values = saved[2], &dense = saved[3];
    const at::Tensor& grad = grads[0];
    at::Tensor grad_values, grad_dense;
    if (ctx->needs_input_grad(2)) grad_values = CallSddmm(indptr, indices, std::nullopt, grad, dense);
    if (ctx->needs_input_grad(3)) {
      auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, dense.sym_size(0));
      grad_dense = CallSpmm(t_indptr, t_indices, values.index_select(0, perm), grad, "sum");
    }
    return {at::Tensor(), at::Tensor(), grad_values, grad_dense, at::Tensor(), at::Tensor()};
  }
};

at::Tensor SpmmHybAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                           const at::Tensor& dense, int64_t parts, int64_t max_width) {
  return SpmmHybFunction::apply(indptr, indices, values, dense, parts, max_width);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) { m.impl("_spmm_hyb", &sparsetir::ops::SpmmHybAutograd); }
