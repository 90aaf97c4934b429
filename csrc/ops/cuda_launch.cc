#include "cuda_launch.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/DeviceGuard.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "codegen/codegen_cuda.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_cache.h"
#include "support/error.h"

namespace sparsetir::ops {
namespace {

struct Loaded {
  std::shared_ptr<CudaModule> module;
  CUfunction function = nullptr;
};

// One module per (kernel, device), loaded at the kernel's first launch there.
// Keyed by Kernel::id(), not by address: a kernel built with st.compile may be
// freed and another built at the same address. (A freed kernel's entry stays:
// a few kB of device code.)
Loaded& ModuleFor(const Kernel& kernel, int device) {
  static std::mutex mutex;
  static std::map<std::pair<uint64_t, int>, Loaded> table;
  std::lock_guard<std::mutex> lock(mutex);
  Loaded& entry = table[{kernel.id(), device}];
  if (!entry.module) {
    CudaDriver& driver = CudaDriver::Get();
    driver.MakeCurrent(device);
    const auto capability = driver.compute_capability(device);
    const std::string image = GetOrBuildCudaImage(kernel.source(), capability.first * 10 + capability.second);
    entry.module = CudaModule::Load(image);
    entry.function = entry.module->Function(kernel.cuda_symbol());
  }
  return entry;
}

}  // namespace

int ResidentWarps(int device) {
  static std::mutex mutex;
  static std::map<int, int> warps;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = warps.find(device);
  if (found == warps.end()) found = warps.emplace(device, CudaDriver::Get().resident_warps(device)).first;
  return found->second;
}

std::string CudaUnavailableReason() {
  std::string why;
  return CudaDriver::Available(&why) ? "" : why;
}

void LaunchOnDevice(const Kernel& kernel, const SparsetirArg* args, int device) {
  ICHECK(kernel.target().is_cuda()) << "a " << kernel.target().str() << " kernel launched on a GPU";
  const std::array<int64_t, 6> dims = kernel.LaunchDims(args);
  for (int64_t d : dims) {
    if (d == 0) return;  // an empty grid: nothing to do
  }
  for (int d = 0; d < 3; ++d) {
    if (dims[d] > (d == 0 ? 2147483647LL : 65535LL)) {
      throw UserError(UserErrorKind::kArgument, "kernel " + kernel.name() + " needs " + std::to_string(dims[d]) +
                                                    " blocks along grid dimension " + std::to_string(d) +
                                                    ", more than CUDA allows");
    }
  }
  c10::DeviceGuard guard(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device)));
  Loaded& loaded = ModuleFor(kernel, device);
  CudaDriver::Get().MakeCurrent(device);
  // cuLaunchKernel takes the address of each argument's value: pointers and
  // scalars of the parameter's own C type.
  const auto& params = kernel.lowered()->params;
  std::vector<int32_t> int32s(params.size());
  std::vector<void*> values(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->dtype == DataType::kInt32) {
      int32s[i] = static_cast<int32_t>(args[i].i64);
      values[i] = &int32s[i];
    } else {
      values[i] = const_cast<SparsetirArg*>(&args[i]);  // a pointer, or an int64 scalar: the union's first bytes
    }
  }
  void* stream = at::accelerator::getCurrentStream(static_cast<c10::DeviceIndex>(device)).native_handle();
  CudaDriver::Get().Launch(loaded.function,
                           {static_cast<unsigned>(dims[0]), static_cast<unsigned>(dims[1]), static_cast<unsigned>(dims[2])},
                           {static_cast<unsigned>(dims[3]), static_cast<unsigned>(dims[4]), static_cast<unsigned>(dims[5])},
                           0, stream, values.data());
}

}  // namespace sparsetir::ops
