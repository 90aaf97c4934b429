// The fast path of the autograd kernels: a call through which no gradient can
// flow runs the operator below autograd directly.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <functional>
#include <initializer_list>
#include <optional>

namespace sparsetir::ops {

// True when no gradient can flow through a call with these differentiable
// inputs: grad mode is off or none of them requires grad, and none carries a
// forward-mode tangent (those still go through the autograd Function, which
// names what it does not support). torch::autograd::Function::apply would
// otherwise build a node, a context and the saved variables only to drop
// them: about a microsecond, a fifth of a call on a tiny graph.
inline bool NoGradientFlows(std::initializer_list<std::reference_wrapper<const at::Tensor>> inputs) {
  const bool grad_mode = at::GradMode::is_enabled();
  for (const at::Tensor& t : inputs) {
    if (!t.defined()) continue;
    if ((grad_mode && t.requires_grad()) || t._fw_grad(/*level=*/0).defined()) return false;
  }
  return true;
}

}  // namespace sparsetir::ops
