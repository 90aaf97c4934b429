// A CUDA kernel run on the CPU under the SIMT emulator (codegen/simt_emulator.h):
// the emulator header, the kernel's CUDA source and the emulator's entry,
// built by the system compiler for this CPU at the first launch (a kernel
// that never runs on host memory never pays for it). The entry takes the
// kernel's arguments followed by the six launch dimensions and the launch's
// SparsetirSimt (runtime/simt_scheduler.h); a launch that deadlocked throws
// what the emulator saw.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/module.h"

namespace sparsetir {

class EmulatedCudaModule : public Module {
 public:
  // The launch (grid x, y, z, block x, y, z) for packed arguments.
  using LaunchDims = std::function<std::array<int64_t, 6>(const SparsetirArg*)>;

  // `source`: the emulator header, the CUDA source and the emulator entry;
  // `kernel` names the kernel in messages; `cooperative`: its threads run as
  // fibers (the CUDA source synchronizes, KernelSynchronizes).
  EmulatedCudaModule(std::string source, std::string kernel, bool cooperative, size_t params, LaunchDims dims,
                     size_t dynamic_shared_bytes = 0);
  void Launch(const SparsetirArg* args, const SparsetirLauncher* launcher) const override;

 private:
  std::string source_;
  std::string kernel_;
  bool cooperative_;
  size_t params_;
  LaunchDims dims_;
  size_t dynamic_shared_bytes_;
  mutable std::once_flag built_;
  mutable std::shared_ptr<CpuModule> module_;
};

// How many cuda kernels this process ran under the SIMT emulator (tests).
std::atomic<int64_t>& EmulatedRuns();
// The kernel this process last launched under the emulator ("" before any):
// which of an operator's kernels ran (tests).
std::string LastEmulatedKernel();

}  // namespace sparsetir
