// st.launch_cuda: a CUDA kernel written by hand, run on CUDA tensors: the
// same call st.emulate_cuda runs on CPU tensors under the SIMT emulator.
// The source is compiled by NVRTC for the device's architecture (cached on
// disk like the operators' kernels), loaded once per device in torch's
// primary context and launched on torch's current stream of that device.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "hand_written_args.h"

namespace sparsetir::ops {

// Runs `kernel` (an extern "C" __global__ function of `source`) on `grid`
// blocks of `block` threads with `dynamic_shared_bytes` of dynamic shared
// memory per block. Arguments are converted to the C types the kernel's
// parameters declare (cuda_param_values.h); every tensor must be a
// contiguous CUDA tensor of one device. `options` are NVRTC's (-I, -D, ...).
// Errors name the argument, the parameter or NVRTC's log; without a driver
// or a GPU the error says why.
void LaunchCuda(const std::string& source, const std::string& kernel, const std::array<int64_t, 3>& grid,
                const std::array<int64_t, 3>& block, const std::vector<HandWrittenArg>& args,
                int64_t dynamic_shared_bytes, const std::vector<std::string>& options);

}  // namespace sparsetir::ops
