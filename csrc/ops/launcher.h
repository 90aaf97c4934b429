// The parallel launcher handed to generated kernels: at::parallel_for, so
// kernel threads follow torch.set_num_threads and no second OpenMP runtime
// appears in the process.
#pragma once

#include "codegen/abi.h"

namespace sparsetir::ops {

const SparsetirLauncher* TorchLauncher();

}  // namespace sparsetir::ops
