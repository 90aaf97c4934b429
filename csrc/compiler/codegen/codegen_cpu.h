// The CPU backend: a stage-III PrimFunc -> one C++ translation unit with an
// `extern "C"` entry over raw pointers and integers (codegen/abi.h). The code
// includes no torch header and links nothing: parallel loops are outlined into
// tasks that the launcher the host passes in runs; vectorized loops become GCC
// vector types (explicit SIMD) where they can; prefetch hints become
// __builtin_prefetch. Everything else is the shared printer (codegen_c.h).
#pragma once

#include <string>

#include "ir/function.h"

namespace sparsetir {

std::string CodegenCpu(const PrimFunc& f);

}  // namespace sparsetir
