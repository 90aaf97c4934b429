// st.emulate_cuda: a CUDA kernel written by hand, run on CPU tensors under
// the SIMT emulator (codegen/simt_emulator.h), so that a user can debug it
// without a GPU: the source compiled by the host compiler against the
// emulator header, its blocks spread over torch's threads, a block's threads
// as fibers that meet at __syncthreads and the warp operations.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "hand_written_args.h"

namespace sparsetir::ops {

// Runs `kernel` of `source` on a grid of `grid` blocks of `block` threads,
// with `dynamic_shared_bytes` of dynamic shared memory per block. Arguments
// are checked first (CPU, contiguous, a dtype with a C type; dimensions of
// at least 1; at most 1024 threads a block), each error naming the argument.
// `options` are st.launch_cuda's NVRTC options: macros (-D, -U) are defined
// before the source; line info and -std=c++17 change nothing here; any other
// option is refused by name.
void EmulateCuda(const std::string& source, const std::string& kernel, const std::array<int64_t, 3>& grid,
                 const std::array<int64_t, 3>& block, const std::vector<HandWrittenArg>& args,
                 int64_t dynamic_shared_bytes, const std::vector<std::string>& options);

}  // namespace sparsetir::ops
