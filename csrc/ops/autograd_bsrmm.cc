// The autograd kernel of sparsetir::bsrmm (why autograd is C++:
// sparsetir_torch/ops.py, "autograd").
//
// Gradients (out[block row i] = sum over blocks e = (i, j) of blocks[e] @ dense[block column j]):
//   grad_blocks[e] = grad[block row i] @ dense[block column j]^T  (one bmm over
//                    the gathered block rows and columns),
//   grad_dense     = bsrmm on the transposed structure, whose blocks are the
//                    blocks in transposed order, each transposed.
// The backward calls the operators through the dispatcher, so it is itself
// differentiable (double backward) and traceable by torch.compile.
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

class BsrmmFunction : public torch::autograd::Function<BsrmmFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& blocks, const at::Tensor& dense) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallBsrmm(indptr, indices, blocks, dense);
    }
    ctx->save_for_backward({indptr, indices, blocks, dense});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &indptr = saved[0], &indices = saved[1], &blocks = saved[2], &dense = saved[3];
    const at::Tensor& grad = grads[0];
    const c10::SymInt block_h = blocks.sym_size(1), block_w = blocks.sym_size(2);
    at::Tensor grad_blocks, grad_dense;
    if (ctx->needs_input_grad(2)) {
      at::Tensor g = grad.reshape_symint({-1, block_h, grad.sym_size(1)}).index_select(0, RowIds(indptr, indices));
      at::Tensor d = dense.reshape_symint({-1, block_w, dense.sym_size(1)}).index_select(0, indices);
      grad_blocks = at::bmm(g, d.transpose(1, 2));
    }
    if (ctx->needs_input_grad(3)) {
      auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, dense.sym_size(0) / block_w);
      grad_dense = CallBsrmm(t_indptr, t_indices, blocks.index_select(0, perm).transpose(1, 2).contiguous(), grad);
    }
    return {at::Tensor(), at::Tensor(), grad_blocks, grad_dense};
  }
};

at::Tensor BsrmmAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& blocks,
                         const at::Tensor& dense) {
  if (NoGradientFlows({blocks, dense})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallBsrmm(indptr, indices, blocks, dense);
  }
  return BsrmmFunction::apply(indptr, indices, blocks, dense);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) { m.impl("bsrmm", &sparsetir::ops::BsrmmAutograd); }
