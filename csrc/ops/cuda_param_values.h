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

// One parameter's value: as many bytes as the parameter has.
struct CudaParamValue {
  std::vector<unsigned char> bytes;
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
//  - a float goes to a floating-point parameter, rounded once to its type;
//  - a tuple or list (its items in the fields' order) or a dict (an item for
//    each field, by name) goes to a struct or vector parameter, laid out as
//    on the device, each item converted to its field as above (an array
//    field takes a tuple or list of its elements), padding zero.
// Parameter `i`'s value alone.
CudaParamValue CudaParamValueOf(const std::string& op, const std::string& kernel, const CudaKernelParam& param,
                                size_t i, const HandWrittenArg& arg);

std::vector<CudaParamValue> CudaParamValues(const std::string& op, const std::string& kernel,
                                            const std::vector<CudaKernelParam>& params,
                                            const std::vector<HandWrittenArg>& args);

}  // namespace sparsetir::ops
