// The operators called through the dispatcher, for autograd kernels whose
// backward passes are built from our own ops: going through the dispatcher
// keeps the backward differentiable (double backward) and traceable by
// torch.compile.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>

namespace sparsetir::ops {

at::Tensor CallSpmm(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                    const at::Tensor& dense, c10::string_view reduce);
at::Tensor CallSpmmHyb(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                       const at::Tensor& dense, int64_t parts, int64_t max_width);
at::Tensor CallSddmm(const at::Tensor& indptr, const at::Tensor& indices, const std::optional<at::Tensor>& values,
                     const at::Tensor& x, const at::Tensor& y);
std::tuple<at::Tensor, at::Tensor, at::Tensor> CallTranspose(const at::Tensor& indptr, const at::Tensor& indices,
                                                             c10::SymInt columns);

std::tuple<at::Tensor, at::Tensor> CallSpmmExtremumBackward(const at::Tensor& indptr, const at::Tensor& indices,
                                                            const at::Tensor& values, const at::Tensor& dense,
                                                            const at::Tensor& out, const at::Tensor& grad);

}  // namespace sparsetir::ops
