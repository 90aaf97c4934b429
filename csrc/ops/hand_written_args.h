// The arguments of a hand-written CUDA kernel as Python passes them to
// st.emulate_cuda and st.launch_cuda: tensors, ints, floats, and the tuples,
// lists or dicts of them that a struct or vector parameter takes, converted
// to the C types of the kernel's parameters by the callee.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sparsetir::ops {

struct HandWrittenArg {
  // kAggregate: a tuple or list (`items` in order) or a dict (`keys` beside
  // them), for a struct, a vector type or an array field.
  enum class Kind { kTensor, kInt, kFloat, kAggregate };
  Kind kind = Kind::kInt;
  at::Tensor tensor;
  int64_t int_value = 0;  // a Python int (bool too)
  bool above_int64 = false;  // an int from 2^63 to 2^64 - 1: int_value holds its bits
  double float_value = 0;
  std::vector<HandWrittenArg> items;
  std::vector<std::string> keys;  // a dict's, else empty
};

// Calls `visit` with every tensor among `args`, those inside tuples, lists
// and dicts too, and where it is: "argument 2", "argument 2 [1]",
// "argument 2 ['x']".
void ForEachTensor(const std::vector<HandWrittenArg>& args,
                   const std::function<void(const at::Tensor&, const std::string&)>& visit);

}  // namespace sparsetir::ops
