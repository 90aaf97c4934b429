#include "runtime/emulated_cuda_module.h"

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/kernel_cache.h"
#include "runtime/simt_scheduler.h"
#include "target.h"

namespace sparsetir {

EmulatedCudaModule::EmulatedCudaModule(std::string source, std::string kernel, bool cooperative, size_t params,
                                       LaunchDims dims, size_t dynamic_shared_bytes)
    : source_(std::move(source)),
      kernel_(std::move(kernel)),
      cooperative_(cooperative),
      params_(params),
      dims_(std::move(dims)),
      dynamic_shared_bytes_(dynamic_shared_bytes) {}

namespace {

std::mutex& LastKernelMutex() {
  static std::mutex mutex;
  return mutex;
}

std::string& LastKernel() {
  static std::string name;
  return name;
}

}  // namespace

void EmulatedCudaModule::Launch(const SparsetirArg* args, const SparsetirLauncher* launcher) const {
  ++EmulatedRuns();
  {
    std::lock_guard<std::mutex> lock(LastKernelMutex());
    LastKernel() = kernel_;
  }
  // The emulator runs on this CPU, built for its level.
  std::call_once(built_, [this] { module_ = GetOrBuildCpuModule(source_, Target::HostCpu()); });
  const std::array<int64_t, 6> dims = dims_(args);
  const int64_t threads = dims[0] * dims[1] * dims[2] * dims[3] * dims[4] * dims[5];
  if (threads == 0) return;
  std::vector<SparsetirArg> packed(args, args + params_);
  for (int64_t d : dims) {
    SparsetirArg dim;
    dim.i64 = d;
    packed.push_back(dim);
  }
  SimtLaunch launch(kernel_, cooperative_, SimtOrderFromEnvironment(), dynamic_shared_bytes_);
  SparsetirArg simt;
  simt.ptr = const_cast<SparsetirSimt*>(launch.abi());
  packed.push_back(simt);
  module_->Launch(packed.data(), launcher);
  const std::string error = launch.error();
  if (!error.empty()) throw std::runtime_error(error);
  // Every thread of the grid ran, or the module misreads its thread-local
  // launch state (threadIdx, blockDim, ...). Seen with code built for TLS
  // descriptors (-mtls-dialect=gnu2) on glibc 2.36: the compiler keeps
  // vector registers live across the descriptor call, they came back
  // changed, the blocks ran no thread, and the launch would have returned as
  // if it had.
  if (launch.threads_run() != threads) {
    throw std::runtime_error("SIMT emulator: kernel '" + kernel_ + "' ran " + std::to_string(launch.threads_run()) +
                             " of its launch's " + std::to_string(threads) +
                             " threads: the emulated module misreads its thread-local launch state (as code built "
                             "with -mtls-dialect=gnu2 did on glibc 2.36)");
  }
}

std::atomic<int64_t>& EmulatedRuns() {
  static std::atomic<int64_t> runs{0};
  return runs;
}

std::string LastEmulatedKernel() {
  std::lock_guard<std::mutex> lock(LastKernelMutex());
  return LastKernel();
}

}  // namespace sparsetir
