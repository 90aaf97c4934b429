#include "launch_cuda.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "codegen/cuda_kernel_params.h"
#include "codegen/nvrtc_macro_options.h"
#include "cuda_launch.h"
#include "cuda_param_values.h"
#include "launch_shape.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_cache.h"
#include "support/error.h"

namespace sparsetir::ops {
namespace {

constexpr const char* kOp = "st.launch_cuda";
constexpr int64_t kSharedWithoutAsking = 48 * 1024;

// The device every tensor argument is on: at least one, all CUDA, all the
// same, all contiguous.
int DeviceOf(const std::vector<HandWrittenArg>& args) {
  std::optional<c10::Device> device;
  std::string first;
  ForEachTensor(args, [&](const at::Tensor& t, const std::string& where) {
    TORCH_CHECK_VALUE(t.device().is_cuda(), kOp, ": ", where, " is on ", t.device(),
                      "; every tensor must be a CUDA tensor (st.emulate_cuda runs the same kernel on CPU tensors)");
    TORCH_CHECK_VALUE(!device || *device == t.device(), kOp, ": ", where, " is on ", t.device(), " but ", first,
                      " is on ", *device, "; every tensor must be on one device");
    TORCH_CHECK_VALUE(t.is_contiguous(), kOp, ": ", where, " must be contiguous");
    if (!device) {
      device = t.device();
      first = where;
    }
  });
  TORCH_CHECK_VALUE(device.has_value(), kOp,
                    ": no argument is a CUDA tensor, so no device to run on (st.emulate_cuda runs the same kernel "
                    "on CPU tensors)");
  return device->index();
}

struct Loaded {
  std::shared_ptr<CudaModule> module;
  CUfunction function = nullptr;
  std::vector<CudaKernelParam> params;
};

// The device's compiled module of `kernel` (NVRTC at its first launch there,
// the image cached on disk), with its parameters as declared and as compiled.
Loaded& LoadedFor(const std::string& source, const std::string& kernel, const std::vector<std::string>& options,
                  int device) {
  std::string key = kernel + '\n' + std::to_string(device) + '\n';
  for (const std::string& option : options) key += option + '\n';
  key += source;
  // Kept for the process, as the operators' modules are: unloading one a
  // stream may still run would fault.
  static std::mutex mutex;
  static std::map<std::string, Loaded> table;
  std::lock_guard<std::mutex> lock(mutex);
  Loaded& loaded = table[key];
  if (loaded.module) return loaded;
  std::vector<CudaKernelParam> params = CudaKernelParams(source, kernel, options);
  CudaDriver& driver = CudaDriver::Get();
  driver.MakeCurrent(device);
  const auto capability = driver.compute_capability(device);
  const int arch = capability.first * 10 + capability.second;
  // A template kernel's instance: NVRTC instantiates it and names it.
  const bool instance = ParseCudaKernelName(kernel).instance;
  const CudaImage image = instance ? GetOrBuildCudaImage(source, arch, options, kernel)
                                   : CudaImage{GetOrBuildCudaImage(source, arch, options), kernel};
  auto module = CudaModule::Load(image.image);
  CUfunction function = nullptr;
  try {
    function = module->Function(image.lowered_name);
  } catch (const UserError& e) {
    throw UserError(UserErrorKind::kArgument, std::string(kOp) + ": the compiled source has no kernel '" + kernel +
                                                  "' (" + e.what() + "); declare it extern \"C\" so that its "
                                                  "name is not mangled");
  }
  // Where the driver can tell, the sizes it compiled are the ones read from
  // the source: a misread declaration (a macro, a typedef of another size)
  // fails here instead of passing wrong bytes.
  if (const auto sizes = driver.param_sizes(function)) {
    bool same = sizes->size() == params.size();
    for (size_t i = 0; same && i < params.size(); ++i) same = (*sizes)[i] == params[i].bytes;
    if (!same) {
      std::string read, compiled;
      for (const auto& p : params) read += (read.empty() ? "" : ", ") + std::to_string(p.bytes);
      for (size_t s : *sizes) compiled += (compiled.empty() ? "" : ", ") + std::to_string(s);
      throw UserError(UserErrorKind::kArgument, std::string(kOp) + ": kernel '" + kernel +
                                                    "' was compiled with parameters of " + compiled +
                                                    " bytes, but its declaration reads as " + read + " bytes");
    }
  }
  loaded.params = std::move(params);
  loaded.function = function;
  loaded.module = std::move(module);
  return loaded;
}

}  // namespace

void LaunchCuda(const std::string& source, const std::string& kernel, const std::array<int64_t, 3>& grid,
                const std::array<int64_t, 3>& block, const std::vector<HandWrittenArg>& args,
                int64_t dynamic_shared_bytes, const std::vector<std::string>& options) {
  CheckLaunchShape(kOp, grid, block);
  TORCH_CHECK_VALUE(dynamic_shared_bytes >= 0 && dynamic_shared_bytes <= INT32_MAX, kOp,
                    ": argument 'shared_bytes' must be from 0 to 2^31 - 1, got ", dynamic_shared_bytes);
  for (const std::string& option : options) {
    TORCH_CHECK_VALUE(option.find('\n') == std::string::npos, kOp, ": an NVRTC option holds a newline: '", option,
                      "'");
    try {
      ParseMacroOption(option);  // a malformed -D / -U, named before any device is asked for
    } catch (const UserError& e) {
      TORCH_CHECK_VALUE(false, kOp, ": ", e.what());
    }
  }
  const int device = DeviceOf(args);
  const std::string unavailable = CudaUnavailableReason();
  TORCH_CHECK_VALUE(unavailable.empty(), kOp, ": CUDA kernels cannot run here: ", unavailable);
  c10::DeviceGuard guard(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device)));
  Loaded& loaded = LoadedFor(source, kernel, options, device);
  const std::vector<CudaParamValue> values = CudaParamValues(kOp, kernel, loaded.params, args);
  std::vector<void*> addresses;
  for (const CudaParamValue& value : values) addresses.push_back(const_cast<unsigned char*>(value.bytes.data()));
  CudaDriver& driver = CudaDriver::Get();
  driver.MakeCurrent(device);
  if (dynamic_shared_bytes > kSharedWithoutAsking) {
    driver.set_max_dynamic_shared_bytes(loaded.function, static_cast<int>(dynamic_shared_bytes));
  }
  void* stream = at::accelerator::getCurrentStream(static_cast<c10::DeviceIndex>(device)).native_handle();
  driver.Launch(loaded.function,
                {static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2])},
                {static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]), static_cast<unsigned>(block[2])},
                static_cast<unsigned>(dynamic_shared_bytes), stream, addresses.data());
}

}  // namespace sparsetir::ops
