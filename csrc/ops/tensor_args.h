// Converts Python call arguments (torch tensors, ints) into the torch-free
// KernelArg descriptions the compiler's runtime checks and runs.
#pragma once

#include <torch/extension.h>

#include "runtime/kernel.h"

namespace sparsetir::ops {

// The compiler's dtype for a torch scalar type; kVoid when it has none.
DataType FromTorch(at::ScalarType type);
std::string TorchDtypeName(at::ScalarType type);

KernelArg ToKernelArg(const pybind11::handle& value);

}  // namespace sparsetir::ops
