// The parallel launcher handed to generated kernels: at::parallel_for, so
// kernel threads follow torch.set_num_threads and no second OpenMP runtime
// appears in the process.
#pragma once

#include "codegen/abi.h"

namespace sparsetir::ops {

// A launcher for the current call (it records torch's current thread count).
SparsetirLauncher TorchLauncher();

}  // namespace sparsetir::ops
