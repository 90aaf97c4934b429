// The autograd kernels of sparsetir::bsr_linear and of its blocks' gradient
// sparsetir::_bsr_linear_grad_blocks, so bsr_linear has second derivatives
// (why autograd is C++: sparsetir_torch/ops.py, "autograd").
//
// Gradients (y = x @ W^T with W a BSR matrix, x of shape (..., in)), with
// g = grad flattened to (rows, out):
//   grad_x         = g @ W: a bsr_linear with the transpose of W^T, whose
//                    blocks are W's blocks in transposed order, each
//                    transposed; reshaped to x's shape,
//   grad_blocks[e] = g[:, block row i]^T @ x[:, block column j] for block
//                    e = (i, j) (_bsr_linear_grad_blocks).
// _bsr_linear_grad_blocks is bilinear in x and g: for an incoming gradient GG
// of the blocks (a BSR matrix of W's structure),
//   d/dg = x @ GG^T (bsr_linear with the blocks GG),
//   d/dx = g @ GG   (bsr_linear on the transposed structure, as grad_x above).
// Every pass calls the operators through the dispatcher, so it is
// differentiable again and traceable by torch.compile.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "dispatched_ops.h"
#include "no_gradient_flows.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// g @ W for the BSR matrix W of (indptr, indices, blocks), shaped like x:
// bsr_linear with the transpose of W^T, whose blocks are W's in transposed
// order, each transposed.
at::Tensor TimesTransposed(const at::Tensor& g, const at::Tensor& indptr, const at::Tensor& indices,
                           const at::Tensor& blocks, const at::Tensor& x) {
  auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, x.sym_size(-1) / blocks.sym_size(2));
  return CallBsrLinear(g, t_indptr, t_indices, blocks.index_select(0, perm).transpose(1, 2))
      .reshape_symint(x.sym_sizes());
}

class BsrLinearFunction : public torch::autograd::Function<BsrLinearFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& indptr,
                            const at::Tensor& indices, const at::Tensor& blocks) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallBsrLinear(x, indptr, indices, blocks);
    }
    ctx->save_for_backward({x, indptr, indices, blocks});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &indptr = saved[1], &indices = saved[2], &blocks = saved[3];
    const at::Tensor g = grads[0].reshape_symint({-1, grads[0].sym_size(-1)});
    at::Tensor grad_x, grad_blocks;
    if (ctx->needs_input_grad(0)) grad_x = TimesTransposed(g, indptr, indices, blocks, x);
    if (ctx->needs_input_grad(3)) {
      // The block shape is an int argument: a symbolic one is specialized,
      // as passing it from Python did.
      const int64_t block_h = blocks.sym_size(1).guard_int(__FILE__, __LINE__);
      const int64_t block_w = blocks.sym_size(2).guard_int(__FILE__, __LINE__);
      grad_blocks = CallBsrLinearGradBlocks(x, g, indptr, indices, block_h, block_w);
    }
    return {grad_x, at::Tensor(), at::Tensor(), grad_blocks};
  }
};

at::Tensor BsrLinearAutograd(const at::Tensor& x, const at::Tensor& indptr, const at::Tensor& indices,
                             const at::Tensor& blocks) {
  if (NoGradientFlows({x, blocks})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallBsrLinear(x, indptr, indices, blocks);
  }
  return BsrLinearFunction::apply(x, indptr, indices, blocks);
}

class BsrLinearGradBlocksFunction : public torch::autograd::Function<BsrLinearGradBlocksFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& grad,
                            const at::Tensor& indptr, const at::Tensor& indices, int64_t block_h, int64_t block_w) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallBsrLinearGradBlocks(x, grad, indptr, indices, block_h, block_w);
    }
    ctx->save_for_backward({x, grad, indptr, indices});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &grad = saved[1], &indptr = saved[2], &indices = saved[3];
    const at::Tensor& gg = grads[0];
    at::Tensor grad_x, grad_grad;
    if (ctx->needs_input_grad(0)) {
      grad_x = TimesTransposed(grad.reshape_symint({-1, grad.sym_size(-1)}), indptr, indices, gg, x);
    }
    if (ctx->needs_input_grad(1)) {
      grad_grad = CallBsrLinear(x.reshape_symint({-1, x.sym_size(-1)}), indptr, indices, gg)
                      .reshape_symint(grad.sym_sizes());
    }
    return {grad_x, grad_grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor BsrLinearGradBlocksAutograd(const at::Tensor& x, const at::Tensor& grad, const at::Tensor& indptr,
                                       const at::Tensor& indices, int64_t block_h, int64_t block_w) {
  if (NoGradientFlows({x, grad})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallBsrLinearGradBlocks(x, grad, indptr, indices, block_h, block_w);
  }
  return BsrLinearGradBlocksFunction::apply(x, grad, indptr, indices, block_h, block_w);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) {
  m.impl("bsr_linear", &sparsetir::ops::BsrLinearAutograd);
  m.impl("_bsr_linear_grad_blocks", &sparsetir::ops::BsrLinearGradBlocksAutograd);
}
