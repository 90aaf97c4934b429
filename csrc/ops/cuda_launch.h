// Runs a cuda kernel on a GPU: the device image for the device's
// architecture (NVRTC, cached on disk), loaded once per device in the
// device's primary context (the one torch uses), launched on torch's current
// stream of that device with the kernel's launch dimensions. Nothing here
// links libcuda or libnvrtc: both are opened at the first launch, so the
// extension imports and runs its CPU operators on a machine without them.
#pragma once

#include <string>

#include "codegen/abi.h"
#include "runtime/kernel.h"

namespace sparsetir::ops {

// `args`: the kernel's arguments in parameter order (device pointers and
// scalars), already validated by the caller.
void LaunchOnDevice(const Kernel& kernel, const SparsetirArg* args, int device);

// The warps `device` holds at once (multiprocessors x warps each), asked of
// the driver once per device.
int ResidentWarps(int device);

// Why CUDA kernels cannot run here ("" if they can): no driver, no device.
std::string CudaUnavailableReason();

}  // namespace sparsetir::ops
