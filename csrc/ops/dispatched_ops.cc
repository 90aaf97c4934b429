#include "dispatched_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>

namespace sparsetir::ops {

at::Tensor CallSpmm(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                    const at::Tensor& dense, c10::string_view reduce) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("sparsetir::spmm", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         c10::string_view)>();
  return op.call(indptr, indices, values, dense, reduce);
}

at::Tensor CallSpmmHyb(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& values,
                       const at::Tensor& dense, int64_t parts, int64_t max_width) {
  using T = const at::Tensor&;
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("sparsetir::_spmm_hyb", "")
                       .typed<at::Tensor(T, T, T, T, int64_t, int64_t)>();
  return op.call(indptr, indices, values, dense, parts, max_width);
}

at::Tensor CallSddmm(const at::Tensor& indptr, const at::Tensor& indices, const std::optional<at::Tensor>& values,
                     const at::Tensor& x, const at::Tensor& y) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("sparsetir::sddmm", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                         const at::Tensor&, const at::Tensor&)>();
  return op.call(indptr, indices, values, x, y);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> CallTranspose(const at::Tensor& indptr, const at::Tensor& indices,
                                                             c10::SymInt columns) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("sparsetir::_csr_transpose", "")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                                              c10::SymInt)>();
  return op.call(indptr, indices, std::move(columns));
}

std::tuple<at::Tensor, at::Tensor> CallSpmmExtremumBackward(const at::Tensor& indptr, const at::Tensor& indices,
                                                            const at::Tensor& values, const at::Tensor& dense,
                                                            const at::Tensor& out, const at::Tensor& grad) {
  using T = const at::Tensor&;
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("sparsetir::_spmm_extremum_backward", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(T, T, T, T, T, T)>();
  return op.call(indptr, indices, values, dense, out, grad);
}

}  // namespace sparsetir::ops
