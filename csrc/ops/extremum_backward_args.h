// The checked arguments of _spmm_extremum_backward, shared by its CPU kernel
// (op_spmm_extremum_backward.cc) and its torch-op form for other devices
// (op_spmm_extremum_backward_torch.cc).
#pragma once

#include <ATen/ATen.h>

#include "op_checks.h"

namespace sparsetir::ops {

struct ExtremumBackwardArgs {
  CheckedCsr csr;
  at::Tensor values;  // (nnz)
  at::Tensor dense;   // (n, K)
  at::Tensor out;     // (m, K), the forward's result
  at::Tensor grad;    // (m, K)
};

// Every argument checked (dtypes, shapes, the CSR structure against
// dense.size(0)); errors name sparsetir._spmm_extremum_backward.
ExtremumBackwardArgs CheckExtremumBackwardArgs(const at::Tensor& indptr, const at::Tensor& indices,
                                               const at::Tensor& values, const at::Tensor& dense,
                                               const at::Tensor& out, const at::Tensor& grad);

}  // namespace sparsetir::ops
