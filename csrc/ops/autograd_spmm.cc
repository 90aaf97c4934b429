// The autograd kernel of sparsetir::spmm, in C++.
//
// SpMM is the op GNN training calls most, often on small graphs where the
// per-call cost counts: a Python autograd kernel (torch.library.register_autograd)
// adds several microseconds to every call, inference included, since the
// dispatcher runs the Autograd kernel whenever a tensor carries the autograd
// key. This one costs a fraction of that. sddmm's is C++ too
// (autograd_sddmm.cc); the other ops keep their Python autograd
// (sparsetir_torch/ops.py).
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

#include "dispatched_ops.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Non-zeros per row (sizes stay symbolic under torch.compile).
at::Tensor RowLengths(const at::Tensor& indptr) { return indptr.slice(0, 1) - indptr.slice(0, 0, -1); }

// The row of every non-zero: row r repeated length(r) times.
at::Tensor RowIds(const at::Tensor& indptr, const at::Tensor& indices) {
  return at::repeat_interleave_symint(RowLengths(indptr), std::optional<c10::SymInt>(indices.sym_size(0)));
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
      if (reduce == "mean") g = grad / RowLengths(indptr).clamp_min(1).unsqueeze(1).to(grad.scalar_type());
      if (ctx->needs_input_grad(2)) grad_values = CallSddmm(indptr, indices, std::nullopt, g, dense);
      if (ctx->needs_input_grad(3)) {
        auto [t_indptr, t_indices, perm] = CallTranspose(indptr, indices, dense.sym_size(0));
        grad_dense = CallSpmm(t_indptr, t_indices, values.index_select(0, perm), g, "sum");
      }
    } else if (dense.device().is_cpu()) {
      auto [gv, gd] = CallSpmmExtremumBackward(indptr, indices, values, dense, saved[4], grad.contiguous());
      if (ctx->needs_input_grad(2)) grad_values = gv;
      if (ctx->needs_input_grad(3)) grad_dense = gd;
    } else {
      const at::Tensor& out = saved[4];
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
      if (ctx->needs_input_grad(2)) grad_values = (share * gathered).sum(1);
      if (ctx->needs_input_grad(3)) grad_dense = at::zeros_like(dense).index_add_(0, indices, share * values.unsqueeze(1));
    }
    return {at::Tensor(), at::Tensor(), grad_values, grad_dense, at::Tensor()};
  }
};

at::Tensor SpmmAutograd(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                        const at::Tensor& dense, c10::string_view reduce) {
  return SpmmFunction::apply(indptr, indices, values, dense, reduce);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) { m.impl("spmm", &sparsetir::ops::SpmmAutograd); }
