// The bytes cuLaunchKernel reads for each parameter of a hand-written
// kernel: every argument converted to its parameter's own C type
// (codegen/cuda_kernel_params.h), or an error naming both where it cannot be.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda_kernel_params.h"
#include "hand_written_args.h"

namespace sparsetir::ops {

// One parameter's value: its bytes first, in a slot that suits any of them.
struct alignas(8) CudaParamValue {
  unsigned char bytes[8] = {};
};

// Checks `args` against `params` and converts them, for `op` (named in every
// error):
//  - a tensor goes to a pointer parameter as its data pointer; where the
//    pointer's element type is an arithmetic type, __half or __nv_bfloat16
//    it must be the tensor's (float* for float32, int* or unsigned* for
//    int32, __half* or unsigned short* for float16, ...); any other element
//    type (float4, __half2, void, a struct) takes any tensor, as in CUDA;
//  - an int goes to an integer or bool parameter if the type holds it, or to
//    a floating-point one (converted);
//  - a float goes to a floating-point parameter, rounded once to its type.
std::vector<CudaParamValue> CudaParamValues(const std::string& op, const std::string& kernel,
                                            const std::vector<CudaKernelParam>& params,
                                            const std::vector<HandWrittenArg>& args);

}  // namespace sparsetir::ops
