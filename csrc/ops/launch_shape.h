// CUDA's limits on a launch's shape, the same on every architecture since
// sm_30: st.launch_cuda and st.emulate_cuda refuse alike what a GPU would, so
// a kernel debugged under the emulator does not fail only on the GPU.
#pragma once

#include <array>
#include <cstdint>

namespace sparsetir::ops {

// Grid dimensions from 1 to 2^31 - 1 (x) and 65,535 (y, z); block
// dimensions from 1 to 1024 (x, y) and 64 (z), at most 1024 threads in all.
// Errors name `op` and the dimension.
void CheckLaunchShape(const char* op, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& block);

}  // namespace sparsetir::ops
