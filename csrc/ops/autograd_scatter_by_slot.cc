// The autograd kernel of sparsetir::_scatter_by_slot (why autograd is C++:
// sparsetir_torch/ops.py, "autograd").
//
// out[slot[e]] += values[e] (duplicates add up), so every non-zero, duplicates
// included, receives its slot's gradient: grad_values = grad[slot].
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "dispatched_ops.h"

namespace sparsetir::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class ScatterBySlotFunction : public torch::autograd::Function<ScatterBySlotFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& values, const at::Tensor& slot,
                            const at::Tensor& indptr, int64_t size, int64_t group_rows) {
    at::Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      out = CallScatterBySlot(values, slot, indptr, size, group_rows);
    }
    ctx->save_for_backward({slot});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor grad_values;
    if (ctx->needs_input_grad(0)) grad_values = grads[0].index_select(0, ctx->get_saved_variables()[0]);
    return {grad_values, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor ScatterBySlotAutograd(const at::Tensor& values, const at::Tensor& slot, const at::Tensor& indptr,
                                 int64_t size, int64_t group_rows) {
  return ScatterBySlotFunction::apply(values, slot, indptr, size, group_rows);
}

}  // namespace
}  // namespace sparsetir::ops

TORCH_LIBRARY_IMPL(sparsetir, Autograd, m) { m.impl("_scatter_by_slot", &sparsetir::ops::ScatterBySlotAutograd); }
