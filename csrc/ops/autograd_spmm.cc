// The autograd kernels of sparsetir::spmm and of its max/min backward helper
// sparsetir::_spmm_extremum_backward (why autograd is C++: sparsetir_torch/ops.py,
// "autograd").
//
// Gradients (out[i] = reduce over non-zeros e = (i, j) of values[e] * dense[j]):
//   sum / mean: grad_values = sddmm(grad') and grad_dense = spmm on the cached
//               transpose, where grad' = grad (sum) or grad / row length (mean);
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

// The gradients of a max / min reduction (2-D dense): each output element's
// gradient goes to the first non-zero of its row that attains it.
std::tuple<at::Tensor, at::Tensor> ExtremumBackward(const at::Tensor& indptr, const at::Tensor& indices,
                                                    const at::Tensor& values, const at::Tensor& dense,
                                                    const at::Tensor& out, const at::Tensor& grad, bool values_grad) {
  if (dense.device().is_cpu()) {
    return CallSpmmExtremumBackward(indptr, indices, values, dense, out, grad.contiguous(), values_grad);
  }
  at::Tensor rows = RowIds(indptr, indices);
  at::Tensor gathered = dense.index_select(0, indices);
  at::Tensor hit = values.unsqueeze(1) * gathered == out.index_select(0, rows);
  // The first attaining non-zero of each (row, column): the smallest e.
  const int64_t nnz = indices.size(0);
  at::Tensor position = at::arange(nnz, indices.options().dtype(at::kLong)).unsqueeze(1).expand_as(hit);
  at::Tensor candidate = at::where(hit, position, at::full({}, nnz, position.options()));
  at::Tensor first = at::full(out.sizes(), nnz, position.options())
                         .scatter_reduce(0, rows.to(at::kLong).unsqueeze(1).expand_as(hit), candidate, "amin");
  at::Tensor share = (candidate == first.index_select(0, rows)).to(grad.scalar_type()) * grad.index_select(0, rows);
  return {(share * gathered).sum(1), at::zeros_like(dense).index_add_(0, indices, share * values.unsqueeze(1))};
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
      at::Tensor g = grad;
      if (reduce == "mean") g = grad / RowMeanDivisors(indptr, grad);
      if (ctx->needs_input_grad(2)) {
        // Values shared by the heads of a 3-D dense take the dot product
        // over all of a row's heads and features.
        const bool shared = values.dim() == 1 && dense.dim() == 3;
        grad_values = shared ? CallSddmm(indptr, indices, std::nullopt, g.flatten(1), dense.flatten(1), "dot")
                             : CallSddmm(indptr, indices, std::nullopt, g, dense, "dot");
      }
      if (ctx->needs_input_grad(3)) {
        auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, dense.sym_size(0));
        grad_dense = CallSpmm(t_indptr, t_indices, values.index_select(0, perm), g, "sum");
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
  return SpmmFunction::apply(indptr, indices, values, dense, reduce);
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
}
