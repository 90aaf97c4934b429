// Calls of the built-in CSR kernels on checked, contiguous CPU tensors of one
// value dtype. The operators (and their backward passes) are built from these.
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace sparsetir::ops {

// out (rows, K) = reduce over the non-zeros of values * dense[j, :], with
// `script` one of "csrmm" (sum), "csrmm_max", "csrmm_min". Rows without
// non-zeros keep the reduction's identity (0, -inf, +inf).
void RunCsrmm(const std::string& script, const at::Tensor& indptr, const at::Tensor& indices,
              const at::Tensor& values, const at::Tensor& dense, const at::Tensor& out);

// out (nnz,) = x[i, :] . y[j, :] for every non-zero (i, j).
void RunSddmmDot(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x, const at::Tensor& y,
                 const at::Tensor& out);

}  // namespace sparsetir::ops
