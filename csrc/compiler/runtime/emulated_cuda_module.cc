#include "runtime/emulated_cuda_module.h"

#include <vector>

#include "runtime/kernel_cache.h"
#include "target.h"

namespace sparsetir {

EmulatedCudaModule::EmulatedCudaModule(std::string source, size_t params, LaunchDims dims)
    : source_(std::move(source)), params_(params), dims_(std::move(dims)) {}

void EmulatedCudaModule::Launch(const SparsetirArg* args, const SparsetirLauncher* launcher) const {
  ++EmulatedRuns();
  // The emulator runs on this CPU, built for its level.
  std::call_once(built_, [this] { module_ = GetOrBuildCpuModule(source_, Target::HostCpu()); });
  const std::array<int64_t, 6> dims = dims_(args);
  if (dims[0] * dims[1] * dims[2] * dims[3] * dims[4] * dims[5] == 0) return;
  std::vector<SparsetirArg> packed(args, args + params_);
  for (int64_t d : dims) {
    SparsetirArg dim;
    dim.i64 = d;
    packed.push_back(dim);
  }
  module_->Launch(packed.data(), launcher);
}

std::atomic<int64_t>& EmulatedRuns() {
  static std::atomic<int64_t> runs{0};
  return runs;
}

}  // namespace sparsetir
