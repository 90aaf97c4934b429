// The arguments of a hand-written CUDA kernel as Python passes them to
// st.emulate_cuda and st.launch_cuda: tensors, ints and floats, converted to
// the C types of the kernel's parameters by the callee.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace sparsetir::ops {

struct HandWrittenArg {
  enum class Kind { kTensor, kInt, kFloat };
  Kind kind = Kind::kInt;
  at::Tensor tensor;
  int64_t int_value = 0;  // a Python int (bool too)
  double float_value = 0;
};

}  // namespace sparsetir::ops
