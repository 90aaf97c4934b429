// Argument checks shared by the operators. Every failure is a ValueError
// whose message starts with the operator ("sparsetir.spmm: ") and names the
// argument. Non-contiguous tensors are made contiguous rather than refused.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "graph_cache.h"

namespace sparsetir::ops {

// A CSR structure checked for an operator: contiguous index tensors of one
// dtype, validated once per graph (see graph_cache.h).
struct CheckedCsr {
  at::Tensor indptr;
  at::Tensor indices;
  std::shared_ptr<GraphInfo> info;
  int64_t rows() const { return indptr.numel() - 1; }
  int64_t nnz() const { return indices.numel(); }
};

// indptr / indices: 1-D int32 or int64 CPU tensors of the same dtype, a valid
// CSR structure whose indices are < `columns` (`columns_name` says where that
// bound comes from, for the message).
CheckedCsr CheckCsr(const std::string& op, const at::Tensor& indptr, const at::Tensor& indices, int64_t columns,
                    const std::string& columns_name);

// A 1-D int32 or int64 CPU tensor (coordinates, such as a COO row array);
// the contiguous version of it.
at::Tensor CheckIndexTensor(const std::string& op, const char* name, const at::Tensor& t);

// A floating-point CPU tensor with `dim` dimensions (any when dim < 0); the
// contiguous version of it.
at::Tensor CheckFloat(const std::string& op, const char* name, const at::Tensor& t, int64_t dim);

// `t` must have dtype `dtype` (that of `like_name`).
void CheckSameDtype(const std::string& op, const char* name, const at::Tensor& t, at::ScalarType dtype,
                    const char* like_name);

std::string ShapeString(at::IntArrayRef shape);

// The dtype a kernel computes `t` in: float64 stays, everything else (float32,
// and 16-bit types whose exponentials and sums need the range) is float32.
inline at::ScalarType ComputeDtype(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

// Raises a ValueError naming both arguments unless `t` is on `like`'s device.
void CheckSameDevice(const std::string& op, const char* name, const at::Tensor& t, const at::Tensor& like,
                     const char* like_name);

// Raises a ValueError naming `arg` if `rows * width` slots of a derived format
// overflow or exceed 2^40 (no machine could allocate them).
void CheckSlotCount(const std::string& op, const char* arg, int64_t rows, int64_t width);

}  // namespace sparsetir::ops
