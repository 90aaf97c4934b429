// _spmm_extremum_backward on CUDA tensors, written with torch operators (no
// generated kernel): the same rule as the CPU kernel, every output element's
// gradient going to the first non-zero of its row, in storage order, whose
// product attains it. It holds nnz x K temporaries, which the CPU kernel
// avoids; the GPU's memory is the bound.
#include <ATen/ATen.h>

#include "csr_rows.h"
#include "extremum_backward_args.h"
#include "ops.h"

namespace sparsetir::ops {

std::tuple<at::Tensor, at::Tensor> SpmmExtremumBackwardByTorchOps(const at::Tensor& indptr, const at::Tensor& indices,
                                                                  const at::Tensor& values, const at::Tensor& dense,
                                                                  const at::Tensor& out, const at::Tensor& grad,
                                                                  bool values_grad) {
  const ExtremumBackwardArgs a = CheckExtremumBackwardArgs(indptr, indices, values, dense, out, grad);
  const int64_t nnz = a.csr.nnz();
  const at::Tensor rows = RowIds(a.csr.indptr, a.csr.indices).to(at::kLong).unsqueeze(1);
  const at::Tensor gathered = a.dense.index_select(0, a.csr.indices);
  // The product as the forward computed it, in the value dtype.
  const at::Tensor hit = a.values.unsqueeze(1) * gathered == a.out.index_select(0, rows.squeeze(1));
  const at::Tensor position = at::arange(nnz, rows.options()).unsqueeze(1).expand_as(hit);
  const at::Tensor candidate = at::where(hit, position, at::full({}, nnz, position.options()));
  // The first attaining non-zero of each (row, column): the smallest position.
  const at::Tensor first =
      at::full(a.out.sizes(), nnz, position.options()).scatter_reduce(0, rows.expand_as(hit), candidate, "amin");
  const at::Tensor share = (candidate == first.index_select(0, rows.squeeze(1))).to(a.grad.scalar_type()) *
                           a.grad.index_select(0, rows.squeeze(1));
  at::Tensor grad_values = values_grad ? (share * gathered).sum(1) : at::zeros_like(a.values);
  at::Tensor grad_dense = at::zeros_like(a.dense).index_add_(0, a.csr.indices, share * a.values.unsqueeze(1));
  return {grad_values, grad_dense};
}

}  // namespace sparsetir::ops
