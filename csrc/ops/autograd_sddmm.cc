// The autograd kernel of sparsetir::sddmm (why autograd is C++:
// sparsetir_torch/ops.py, "autograd").
//
// Gradients (out[e] = v[e] * f(x[i], y[j]) for non-zero e = (i, j), v = 1
// without values), with g = grad * v and perm the transpose's order:
//   grad_values = grad * f(x[i], y[j]), summed to the shape of values;
//   op "dot":  grad_x = spmm(pattern, g, y), grad_y = spmm(transpose, g[perm], x)
//              (per-head spmm with heads);
//   op "mul":  the same with each feature a head of width 1;
//   op "add":  grad_x[i] = sum of row i's g, grad_y[j] = sum of column j's g.
// The backward calls the operators through the dispatcher, so it is itself
// differentiable and traceable by torch.compile.
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

// `values` (nnz,) or of `out`'s shape, viewed so that it broadcasts over out.
at::Tensor Broadcastable(const at::Tensor& values, const at::Tensor& out) {
  if (values.dim() == out.dim()) return values;
  std::vector<int64_t> shape(out.dim(), 1);
  shape[0] = values.size(0);
  return values.view(shape);
}

// `t` (of out's shape) summed to the shape of `values`.
at::Tensor SumToValues(const at::Tensor& t, const at::Tensor& values) {
  return values.dim() == t.dim() ? t : t.flatten(1).sum(1);
}

// x viewed as (rows, F, 1): every feature of "mul" a head of width 1.
at::Tensor FeaturesAsHeads(const at::Tensor& t) { return t.reshape({t.size(0), -1, 1}); }

class SddmmFunction : public torch::autograd::Function<SddmmFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& indptr, const at::Tensor& indices,
                            const std::optional<at::Tensor>& values, const at::Tensor& x, const at::Tensor& y,
                            c10::string_view op) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallSddmm(indptr, indices, values, x, y, op);
    }
    ctx->saved_data["op"] = std::string(op);
    // An undefined tensor stands for "no values" among the saved ones.
    ctx->save_for_backward({indptr, indices, values.has_value() ? *values : at::Tensor(), x, y});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &indptr = saved[0], &indices = saved[1], &values = saved[2], &x = saved[3], &y = saved[4];
    const std::string op = ctx->saved_data["op"].toStringRef();
    const at::Tensor& grad = grads[0];
    const at::Tensor g = values.defined() ? grad * Broadcastable(values, grad) : grad;
    at::Tensor grad_values, grad_x, grad_y;
    // needs_input_grad counts tensor inputs only: without values, x and y
    // are inputs 2 and 3.
    const size_t first = values.defined() ? 3 : 2;
    if (values.defined() && ctx->needs_input_grad(2)) {
      grad_values = SumToValues(grad * CallSddmm(indptr, indices, std::nullopt, x, y, op), values);
    }
    const bool want_x = ctx->needs_input_grad(first), want_y = ctx->needs_input_grad(first + 1);
    if (op == "add") {
      if (want_x) grad_x = SumByIndex(x, RowIds(indptr, indices), g);
      if (want_y) grad_y = SumByIndex(y, indices, g);
    } else if (op == "mul") {
      const at::Tensor gf = g.reshape({g.size(0), -1});
      if (want_x) grad_x = CallSpmm(indptr, indices, gf, FeaturesAsHeads(y), "sum").view(x.sizes());
      if (want_y) {
        auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, y.sym_size(0));
        grad_y = CallSpmm(t_indptr, t_indices, gf.index_select(0, perm), FeaturesAsHeads(x), "sum").view(y.sizes());
      }
    } else {
      if (want_x) grad_x = CallSpmm(indptr, indices, g, y, "sum");
      if (want_y) {
        auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, y.sym_size(0));
        grad_y = CallSpmm(t_indptr, t_indices, g.index_select(0, perm), x, "sum");
      }
    }
    return {at::Tensor(), at::Tensor(), grad_values, grad_x, grad_y, at::Tensor()};
  }
};

at::Tensor SddmmAutograd(const at::Tensor& indptr, const at::Tensor& indices, const std::optional<at::Tensor>& values,
                         const at::Tensor& x, const at::Tensor& y, c10::string_view op) {
  const at::Tensor no_values;
  if (NoGradientFlows({values.has_value() ? *values : no_values, x, y})) {
    at::AutoDispatchBelowADInplaceOrView below;
    return CallSddmm(indptr, indices, values, x, y, op);
  }
  return SddmmFunction::apply(indptr, indices, values, x, y, op);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) { m.impl("sddmm", &sparsetir::ops::SddmmAutograd); }
