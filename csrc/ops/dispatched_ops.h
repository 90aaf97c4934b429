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
                     const at::Tensor& x, const at::Tensor& y, c10::string_view op = "dot");
std::tuple<at::Tensor, at::Tensor, at::Tensor> CallTranspose(const at::Tensor& indptr, const at::Tensor& indices,
                                                             c10::SymInt columns);

at::Tensor CallBsrmm(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& blocks,
                     const at::Tensor& dense);
at::Tensor CallSparseAttention(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q,
                               const at::Tensor& k, const at::Tensor& v, std::optional<double> scale);
std::tuple<at::Tensor, at::Tensor> CallSparseAttentionForward(const at::Tensor& indptr, const at::Tensor& indices,
                                                              const at::Tensor& q, const at::Tensor& k,
                                                              const at::Tensor& v, std::optional<double> scale);
at::Tensor CallEdgeSoftmax(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& scores);
at::Tensor CallDropout(const at::Tensor& input, double p, const at::Tensor& seed);
std::tuple<at::Tensor, at::Tensor> CallGatAttentionForward(const at::Tensor& indptr, const at::Tensor& indices,
                                                           const at::Tensor& a_dst, const at::Tensor& a_src,
                                                           const at::Tensor& x, double negative_slope);
at::Tensor CallBsrLinear(const at::Tensor& x, const at::Tensor& indptr, const at::Tensor& indices,
                         const at::Tensor& blocks);
at::Tensor CallScatterBySlot(const at::Tensor& values, const at::Tensor& slot, const at::Tensor& indptr, int64_t size,
                             int64_t group_rows);

// Backward helpers.
at::Tensor CallSpmmDenseBackward(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                                 const at::Tensor& grad, c10::SymInt columns, c10::string_view reduce,
                                 bool cache_values);
std::tuple<at::Tensor, at::Tensor> CallSpmmExtremumBackward(const at::Tensor& indptr, const at::Tensor& indices,
                                                            const at::Tensor& values, const at::Tensor& dense,
                                                            const at::Tensor& out, const at::Tensor& grad,
                                                            bool values_grad = true);
std::tuple<at::Tensor, at::Tensor, at::Tensor> CallSparseAttentionBackward(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, const at::Tensor& out, const at::Tensor& grad_out, std::optional<double> scale,
    const std::optional<at::Tensor>& lse = std::nullopt);
at::Tensor CallEdgeSoftmaxBackward(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& out,
                                   const at::Tensor& grad);
std::tuple<at::Tensor, at::Tensor, at::Tensor> CallGatAttentionBackward(
    const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& a_dst, const at::Tensor& a_src,
    const at::Tensor& x, const at::Tensor& probs, const at::Tensor& grad_out, double negative_slope);
at::Tensor CallBsrLinearGradBlocks(const at::Tensor& x, const at::Tensor& grad, const at::Tensor& indptr,
                                   const at::Tensor& indices, int64_t block_h, int64_t block_w);

}  // namespace sparsetir::ops
