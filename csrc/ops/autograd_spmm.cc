// The autograd kernels of sparsetir::spmm and of its max/min backward helper
// sparsetir::_spmm_extremum_backward (why autograd is C++: sparsetir_torch/ops.py,
// "autograd").
//
// Gradients (out[i] = reduce over non-zeros e = (i, j) of values[e] * dense[j]):
//   sum / mean: grad_values = sddmm(grad') with grad' = grad (sum) or grad /
//               row length (mean), and grad_dense = _spmm_dense_backward: an
//               spmm on the cached transpose whose values (with the mean's
//               row lengths folded in) are cached too while they are constant;
//   max / min:  each output element's gradient goes to the first non-zero of
//               its row that attains it (as torch.sparse.mm(reduce="amax")):
//               on the CPU one pass over the rows' non-zeros and one over the
//               attaining entries (_spmm_extremum_backward, O(nnz + (m + n) K)
//               memory);
//               elsewhere a formula of torch ops (nnz x K temporaries).
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

// The row lengths (at least 1) of `indptr` shaped to divide `grad` row-wise.
at::Tensor RowMeanDivisors(const at::Tensor& indptr, const at::Tensor& grad) {
  std::vector<int64_t> shape(grad.dim(), 1);
  shape[0] = -1;
  return RowLengths(indptr).clamp_min(1).view(shape).to(grad.scalar_type());
}

// The gradient of spmm's values for reduce "sum" / "mean": per non-zero
// (i, j), the dot product of grad[i] (divided by row i's length for the
// mean) and dense[j]. Values shared by the heads of a 3-D dense take the dot
// product over all of a row's heads and features.
at::Tensor SumMeanValuesGrad(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& grad,
                             const at::Tensor& dense, const std::string& reduce, bool shared) {
  const at::Tensor g = reduce == "mean" ? grad / RowMeanDivisors(indptr, grad) : grad;
  return shared ? CallSddmm(indptr, indices, std::nullopt, g.flatten(1), dense.flatten(1), "dot")
                : CallSddmm(indptr, indices, std::nullopt, g, dense, "dot");
}

// The gradients of a max / min reduction (2-D dense): each output element's
// gradient goes to the first non-zero of its row that attains it.
std::tuple<at::Tensor, at::Tensor> ExtremumBackward(const at::Tensor& indptr, const at::Tensor& indices,
                                                    const at::Tensor& values, const at::Tensor& dense,
                                                    const at::Tensor& out, const at::Tensor& grad, bool values_grad) {
  return CallSpmmExtremumBackward(indptr, indices, values, dense, out, grad.contiguous(), values_grad);
}

class SpmmFunction : public torch::autograd::Function<SpmmFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& values, const at::Tensor& dense, c10::string_view reduce) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallSpmm(indptr, indices, values, dense, reduce);
    }
    const bool extremum = reduce == "max" || reduce == "min";
    ctx->saved_data["reduce"] = std::string(reduce);
    ctx->save_for_backward({indptr, indices, values, dense, extremum ? out : at::Tensor()});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &indptr = saved[0], &indices = saved[1], &values = saved[2], &dense = saved[3];
    const std::string reduce = ctx->saved_data["reduce"].toStringRef();
    const at::Tensor& grad = grads[0];
    at::Tensor grad_values, grad_dense;
    if (reduce == "sum" || reduce == "mean") {
      if (ctx->needs_input_grad(2)) {
        grad_values = SumMeanValuesGrad(indptr, indices, grad, dense, reduce, values.dim() == 1 && dense.dim() == 3);
      }
      if (ctx->needs_input_grad(3)) {
        // Constant values (a graph's adjacency) keep their transpose cached.
        grad_dense = CallSpmmDenseBackward(indptr, indices, values, grad, dense.sym_size(0), reduce,
                                           /*cache_values=*/!values.requires_grad());
      }
    } else if (dense.dim() == 3) {
      // max / min over heads sharing the values: the 2-D backward of dense
      // viewed as (n, heads * D).
      auto [gv, gd] = ExtremumBackward(indptr, indices, values, dense.flatten(1), saved[4].flatten(1),
                                       grad.flatten(1), ctx->needs_input_grad(2));
      if (ctx->needs_input_grad(2)) grad_values = gv;
      if (ctx->needs_input_grad(3)) grad_dense = gd.view(dense.sizes());
    } else {
      auto [gv, gd] = ExtremumBackward(indptr, indices, values, dense, saved[4], grad, ctx->needs_input_grad(2));
      if (ctx->needs_input_grad(2)) grad_values = gv;
      if (ctx->needs_input_grad(3)) grad_dense = gd;
    }
    return {at::Tensor(), at::Tensor(), grad_values, grad_dense, at::Tensor()};
  }
};

// spmm's dense gradient A^T grad is linear in grad and in the values: its
// own gradients are an spmm (with grad's reduce) and an sddmm, so a second
// derivative of spmm sum / mean goes through.
class SpmmDenseBackwardFunction : public torch::autograd::Function<SpmmDenseBackwardFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const at::Tensor& values, const at::Tensor& grad, c10::SymInt columns,
                            c10::string_view reduce, bool cache_values) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallSpmmDenseBackward(indptr, indices, values, grad, columns, reduce, cache_values);
    }
    ctx->saved_data["reduce"] = std::string(reduce);
    ctx->save_for_backward({indptr, indices, values, grad});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &indptr = saved[0], &indices = saved[1], &values = saved[2], &grad = saved[3];
    const std::string reduce = ctx->saved_data["reduce"].toStringRef();
    const at::Tensor& upstream = grads[0];  // (columns, ...) like the dense operand
    at::Tensor grad_values, grad_grad;
    if (ctx->needs_input_grad(2)) {
      grad_values = SumMeanValuesGrad(indptr, indices, grad, upstream, reduce, values.dim() == 1 && grad.dim() == 3);
    }
    if (ctx->needs_input_grad(3)) grad_grad = CallSpmm(indptr, indices, values, upstream, reduce);
    return {at::Tensor(), at::Tensor(), grad_values, grad_grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The CPU max/min backward is one kernel with no backward of its own: a
// second derivative says so instead of being silently zero.
class SpmmExtremumBackwardFunction : public torch::autograd::Function<SpmmExtremumBackwardFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                               const at::Tensor& values, const at::Tensor& dense, const at::Tensor& out,
                               const at::Tensor& grad, bool values_grad) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [grad_values, grad_dense] = CallSpmmExtremumBackward(indptr, indices, values, dense, out, grad, values_grad);
    return {grad_values, grad_dense};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    TORCH_CHECK(false,
                "sparsetir.spmm: second derivatives of reduce='max' / 'min' are not supported "
                "(sparsetir._spmm_extremum_backward has no backward)");
    return {};
  }
};

at::Tensor SpmmAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                        const at::Tensor& dense, c10::string_view reduce) {
  if (NoGradientFlows({values, dense})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallSpmm(indptr, indices, values, dense, reduce);
  }
  return SpmmFunction::apply(indptr, indices, values, dense, reduce);
}

at::Tensor SpmmDenseBackwardAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                                     const at::Tensor& grad, c10::SymInt columns, c10::string_view reduce,
                                     bool cache_values) {
  return SpmmDenseBackwardFunction::apply(indptr, indices, values, grad, std::move(columns), reduce, cache_values);
}

std::tuple<at::Tensor, at::Tensor> SpmmExtremumBackwardAutograd(const at::Tensor& indptr, const at::Tensor& indices,
                                                                const at::Tensor& values, const at::Tensor& dense,
                                                                const at::Tensor& out, const at::Tensor& grad,
                                                                bool values_grad) {
  variable_list grads = SpmmExtremumBackwardFunction::apply(indptr, indices, values, dense, out, grad, values_grad);
  return {grads[0], grads[1]};
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) {
  m.impl("spmm", &sparsetir::ops::SpmmAutograd);
  m.impl("_spmm_extremum_backward", &sparsetir::ops::SpmmExtremumBackwardAutograd);
  m.impl("_spmm_dense_backward", &sparsetir::ops::SpmmDenseBackwardAutograd);
}
