// CUDA code generation: a stage-III PrimFunc -> CUDA C++ for NVRTC, and the
// launch that runs it.
//
// The entry is `extern "C" __global__ void sparsetir_kernel_<function>(<params>)`
// (CudaKernelSymbol: profilers such as torch.profiler, nsys and ncu then name
// each op's kernel), one kernel parameter per function parameter in order
// (handles as pointers of the buffer's storage type, scalars by value), so
// the host passes the addresses of its argument values to cuLaunchKernel.
// Loops bound with sch.bind to blockIdx.{x,y,z} / threadIdx.{x,y,z} become
// the hardware index plus the loop's min, guarded by its extent; the launch
// takes, per dimension, the largest extent bound to it (an expression of the
// scalar parameters, which the host evaluates at each call). What differs
// from the CPU backend:
//  - parallel loops are refused (bind the loop instead); a vectorized loop is
//    an unrolled loop over registers whose contiguous, aligned loads and
//    store move as vector accesses of up to 16 bytes (vector_access.h; the
//    arguments they touch must start aligned: CudaSource::param_alignment);
//    prefetch hints are dropped (the GPU hides latency with other warps);
//  - buffers the kernel would allocate itself (workspaces) are refused in
//    this version; local caches are per-thread arrays, shared caches
//    `__shared__` arrays that the block's threads fill together between two
//    __syncthreads (transforms/lower_shared_caches.h);
//  - a reduction loop bound to threadIdx.x combines its lanes' parts with
//    warp shuffles, and beyond a warp the warps' parts through shared memory
//    (transforms/lower_lane_reductions.h).
// The same source, with the SIMT emulator header before it and
// EmulatorEntry() after it, compiles with the host compiler and runs on CPU
// tensors (codegen/simt_emulator.h).
#pragma once

#include <array>
#include <string>

#include "codegen/codegen_c.h"

namespace sparsetir {

// Launch dimensions in the order grid x, y, z, block x, y, z. A dimension
// with no loop bound to it is 1.
inline constexpr const char* kLaunchTags[6] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                               "threadIdx.x", "threadIdx.y", "threadIdx.z"};

struct CudaSource {
  std::string source;                      // CUDA C++ for NVRTC
  std::string symbol;                      // its kernel's name (CudaKernelSymbol)
  std::string emulator_entry;              // the host entry that runs the grid under the emulator
  std::array<std::vector<Expr>, 6> launch;  // per dimension: the extents bound to it (max taken)
  bool synchronizes = false;               // threads exchange values (lane reductions): fibers under the emulator
  // Per parameter, the bytes its address must be a multiple of (1: any):
  // the vector accesses of vectorized loops (vector_access.h) assume it.
  std::vector<int64_t> param_alignment;
};

CudaSource CodegenCuda(const PrimFunc& f);

// The symbol of the kernel generated from the function `function_name`:
// sparsetir_kernel_<function_name> where the name is a plain ASCII identifier
// (IsScriptName), else sparsetir_kernel. Generated code owns the "sparsetir"
// prefix (identifiers.h), so no script name can collide with it.
std::string CudaKernelSymbol(const std::string& function_name);

}  // namespace sparsetir
