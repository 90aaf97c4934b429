#include "dispatched_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>

namespace sparsetir::ops {
namespace {

using T = const at::Tensor&;

// The typed handle of sparsetir::<name>, looked up once per call site.
template <typename Signature>
c10::TypedOperatorHandle<Signature> Find(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

}  // namespace

at::Tensor CallSpmm(T indptr, T indices, T values, T dense, c10::string_view reduce) {
  static auto op = Find<at::Tensor(T, T, T, T, c10::string_view)>("sparsetir::spmm");
  return op.call(indptr, indices, values, dense, reduce);
}

at::Tensor CallSpmmHyb(T indptr, T indices, T values, T dense, int64_t parts, int64_t max_width) {
  static auto op = Find<at::Tensor(T, T, T, T, int64_t, int64_t)>("sparsetir::_spmm_hyb");
  return op.call(indptr, indices, values, dense, parts, max_width);
}

at::Tensor CallSddmm(T indptr, T indices, const std::optional<at::Tensor>& values, T x, T y, c10::string_view how) {
  static auto op =
      Find<at::Tensor(T, T, const std::optional<at::Tensor>&, T, T, c10::string_view)>("sparsetir::sddmm");
  return op.call(indptr, indices, values, x, y, how);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> CallTranspose(T indptr, T indices, c10::SymInt columns) {
  static auto op = Find<std::tuple<at::Tensor, at::Tensor, at::Tensor>(T, T, c10::SymInt)>("sparsetir::_csr_transpose");
  return op.call(indptr, indices, std::move(columns));
}

at::Tensor CallSpmmDenseBackward(T indptr, T indices, T values, T grad, c10::SymInt columns, c10::string_view reduce,
                                 bool cache_values) {
  static auto op =
      Find<at::Tensor(T, T, T, T, c10::SymInt, c10::string_view, bool)>("sparsetir::_spmm_dense_backward");
  return op.call(indptr, indices, values, grad, std::move(columns), reduce, cache_values);
}

std::tuple<at::Tensor, at::Tensor> CallSpmmExtremumBackward(T indptr, T indices, T values, T dense, T out, T grad,
                                                            bool values_grad) {
  static auto op =
      Find<std::tuple<at::Tensor, at::Tensor>(T, T, T, T, T, T, bool)>("sparsetir::_spmm_extremum_backward");
  return op.call(indptr, indices, values, dense, out, grad, values_grad);
}

at::Tensor CallBsrmm(T indptr, T indices, T blocks, T dense) {
  static auto op = Find<at::Tensor(T, T, T, T)>("sparsetir::bsrmm");
  return op.call(indptr, indices, blocks, dense);
}

at::Tensor CallSparseAttention(T indptr, T indices, T q, T k, T v, std::optional<double> scale) {
  static auto op = Find<at::Tensor(T, T, T, T, T, std::optional<double>)>("sparsetir::sparse_attention");
  return op.call(indptr, indices, q, k, v, scale);
}

std::tuple<at::Tensor, at::Tensor> CallSparseAttentionForward(T indptr, T indices, T q, T k, T v,
                                                              std::optional<double> scale) {
  static auto op = Find<std::tuple<at::Tensor, at::Tensor>(T, T, T, T, T, std::optional<double>)>(
      "sparsetir::_sparse_attention_forward");
  return op.call(indptr, indices, q, k, v, scale);
}

at::Tensor CallEdgeSoftmax(T indptr, T indices, T scores) {
  static auto op = Find<at::Tensor(T, T, T)>("sparsetir::edge_softmax");
  return op.call(indptr, indices, scores);
}

at::Tensor CallDropout(T input, double p, T seed) {
  static auto op = Find<at::Tensor(T, double, T)>("sparsetir::dropout");
  return op.call(input, p, seed);
}

std::tuple<at::Tensor, at::Tensor> CallGatAttentionForward(T indptr, T indices, T a_dst, T a_src, T x,
                                                           double negative_slope) {
  static auto op = Find<std::tuple<at::Tensor, at::Tensor>(T, T, T, T, T, double)>("sparsetir::_gat_attention_forward");
  return op.call(indptr, indices, a_dst, a_src, x, negative_slope);
}

at::Tensor CallBsrLinear(T x, T indptr, T indices, T blocks) {
  static auto op = Find<at::Tensor(T, T, T, T)>("sparsetir::bsr_linear");
  return op.call(x, indptr, indices, blocks);
}

at::Tensor CallScatterBySlot(T values, T slot, T indptr, int64_t size, int64_t group_rows) {
  static auto op = Find<at::Tensor(T, T, T, int64_t, int64_t)>("sparsetir::_scatter_by_slot");
  return op.call(values, slot, indptr, size, group_rows);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> CallSparseAttentionBackward(T indptr, T indices, T q, T k, T v, T out,
                                                                           T grad_out, std::optional<double> scale,
                                                                           const std::optional<at::Tensor>& lse) {
  static auto op = Find<std::tuple<at::Tensor, at::Tensor, at::Tensor>(T, T, T, T, T, T, T, std::optional<double>,
                                                                       const std::optional<at::Tensor>&)>(
      "sparsetir::_sparse_attention_backward");
  return op.call(indptr, indices, q, k, v, out, grad_out, scale, lse);
}

at::Tensor CallEdgeSoftmaxBackward(T indptr, T indices, T out, T grad) {
  static auto op = Find<at::Tensor(T, T, T, T)>("sparsetir::_edge_softmax_backward");
  return op.call(indptr, indices, out, grad);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> CallGatAttentionBackward(T indptr, T indices, T a_dst, T a_src, T x,
                                                                        T probs, T grad_out, double negative_slope) {
  static auto op = Find<std::tuple<at::Tensor, at::Tensor, at::Tensor>(T, T, T, T, T, T, T, double)>(
      "sparsetir::_gat_attention_backward");
  return op.call(indptr, indices, a_dst, a_src, x, probs, grad_out, negative_slope);
}

at::Tensor CallBsrLinearGradBlocks(T x, T grad, T indptr, T indices, int64_t block_h, int64_t block_w) {
  static auto op = Find<at::Tensor(T, T, T, T, int64_t, int64_t)>("sparsetir::_bsr_linear_grad_blocks");
  return op.call(x, grad, indptr, indices, block_h, block_w);
}

}  // namespace sparsetir::ops
