#include "runtime/cuda_driver.h"

#include <map>
#include <mutex>

#include "support/dynamic_library.h"
#include "support/error.h"

namespace sparsetir {

typedef int CUresult;  // CUDA_SUCCESS = 0
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;

// CUdevice_attribute and CUfunction_attribute values used here (cuda.h).
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;
constexpr int kMultiprocessorCount = 16;           // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kMaxThreadsPerMultiprocessor = 39;   // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
constexpr int kFuncMaxThreadsPerBlock = 0;
constexpr int kFuncNumRegs = 4;
constexpr int kFuncMaxDynamicSharedBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

struct CudaDriver::Api {
  CUresult (*Init)(unsigned);
  CUresult (*GetErrorName)(CUresult, const char**);
  CUresult (*GetErrorString)(CUresult, const char**);
  CUresult (*DriverGetVersion)(int*);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxGetCurrent)(CUcontext*);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxGetDevice)(CUdevice*);
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*FuncGetAttribute)(int*, int, CUfunction);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
  // Drivers of CUDA 12.4 and later; nullptr before.
  CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void**, void**);
  // The _v2 entry points: the unsuffixed names are the 32-bit-pointer ABI.
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*StreamSynchronize)(CUstream);
};

namespace {

template <typename F>
bool Bind(const DynamicLibrary& lib, const char* name, F* slot, std::string* why) {
  *slot = reinterpret_cast<F>(lib.Symbol(name));
  if (!*slot) *why = "libcuda.so.1 has no " + std::string(name);
  return *slot != nullptr;
}

// Opens the driver and binds its functions once; nullptr with the reason.
const CudaDriver::Api* LoadApi(std::string* why) {
  static std::once_flag once;
  static const CudaDriver::Api* api = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::string error;
    // Kept for the process: the driver's functions are called until exit.
    static std::unique_ptr<DynamicLibrary> lib;
    lib = DynamicLibrary::Open("libcuda.so.1", &error);
    if (!lib) {
      failure = "the CUDA driver (libcuda.so.1) cannot be opened: " + error;
      return;
    }
    auto* a = new CudaDriver::Api();
    bool ok = Bind(*lib, "cuInit", &a->Init, &failure) && Bind(*lib, "cuGetErrorName", &a->GetErrorName, &failure) &&
              Bind(*lib, "cuGetErrorString", &a->GetErrorString, &failure) &&
              Bind(*lib, "cuDriverGetVersion", &a->DriverGetVersion, &failure) &&
              Bind(*lib, "cuDeviceGetCount", &a->DeviceGetCount, &failure) &&
              Bind(*lib, "cuDeviceGet", &a->DeviceGet, &failure) &&
              Bind(*lib, "cuDeviceGetAttribute", &a->DeviceGetAttribute, &failure) &&
              Bind(*lib, "cuDevicePrimaryCtxRetain", &a->DevicePrimaryCtxRetain, &failure) &&
              Bind(*lib, "cuCtxGetCurrent", &a->CtxGetCurrent, &failure) &&
              Bind(*lib, "cuCtxSetCurrent", &a->CtxSetCurrent, &failure) &&
              Bind(*lib, "cuCtxGetDevice", &a->CtxGetDevice, &failure) &&
              Bind(*lib, "cuModuleLoadData", &a->ModuleLoadData, &failure) &&
              Bind(*lib, "cuModuleUnload", &a->ModuleUnload, &failure) &&
              Bind(*lib, "cuModuleGetFunction", &a->ModuleGetFunction, &failure) &&
              Bind(*lib, "cuFuncGetAttribute", &a->FuncGetAttribute, &failure) &&
              Bind(*lib, "cuFuncSetAttribute", &a->FuncSetAttribute, &failure) &&
              Bind(*lib, "cuLaunchKernel", &a->LaunchKernel, &failure) &&
              Bind(*lib, "cuMemAlloc_v2", &a->MemAlloc, &failure) &&
              Bind(*lib, "cuMemFree_v2", &a->MemFree, &failure) &&
              Bind(*lib, "cuMemcpyHtoD_v2", &a->MemcpyHtoD, &failure) &&
              Bind(*lib, "cuMemcpyDtoH_v2", &a->MemcpyDtoH, &failure) &&
              Bind(*lib, "cuStreamSynchronize", &a->StreamSynchronize, &failure);
    if (!ok) return;
    a->FuncGetParamInfo = reinterpret_cast<decltype(a->FuncGetParamInfo)>(lib->Symbol("cuFuncGetParamInfo"));
    if (CUresult r = a->Init(0); r != 0) {
      const char* name = nullptr;
      a->GetErrorName(r, &name);  // e.g. CUDA_ERROR_NO_DEVICE
      failure = "cuInit failed (" + (name ? std::string(name) : "error " + std::to_string(r)) +
                "): no usable GPU or driver";
      return;
    }
    int count = 0;
    if (a->DeviceGetCount(&count) != 0 || count == 0) {
      failure = "the CUDA driver sees no device";
      return;
    }
    api = a;
  });
  if (!api && why) *why = failure;
  return api;
}

}  // namespace

bool CudaDriver::Available(std::string* why) { return LoadApi(why) != nullptr; }

CudaDriver& CudaDriver::Get() {
  static CudaDriver* driver = nullptr;
  static std::once_flag once;
  std::string why;
  if (!LoadApi(&why)) throw UserError(UserErrorKind::kArgument, "CUDA kernels cannot run here: " + why);
  std::call_once(once, [] { driver = new CudaDriver(); });
  return *driver;
}

CudaDriver::CudaDriver() : api_(LoadApi(nullptr)) {}

void CudaDriver::Check(CUresult result, const char* what) const {
  if (result == 0) return;
  const char* name = "unknown";
  const char* text = "";
  api_->GetErrorName(result, &name);
  api_->GetErrorString(result, &text);
  throw UserError(UserErrorKind::kCompile, std::string(what) + ": " + name + ": " + text);
}

int CudaDriver::device_count() const {
  int count = 0;
  Check(api_->DeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

std::pair<int, int> CudaDriver::compute_capability(int device) const {
  CUdevice d;
  Check(api_->DeviceGet(&d, device), "cuDeviceGet");
  int major = 0, minor = 0;
  Check(api_->DeviceGetAttribute(&major, kComputeCapabilityMajor, d), "cuDeviceGetAttribute");
  Check(api_->DeviceGetAttribute(&minor, kComputeCapabilityMinor, d), "cuDeviceGetAttribute");
  return {major, minor};
}

int CudaDriver::resident_warps(int device) const {
  CUdevice d;
  Check(api_->DeviceGet(&d, device), "cuDeviceGet");
  int sms = 0, threads = 0;
  Check(api_->DeviceGetAttribute(&sms, kMultiprocessorCount, d), "cuDeviceGetAttribute");
  Check(api_->DeviceGetAttribute(&threads, kMaxThreadsPerMultiprocessor, d), "cuDeviceGetAttribute");
  return sms * (threads / 32);
}

std::pair<int, int> CudaDriver::driver_version() const {
  int version = 0;  // 1000 * major + 10 * minor
  Check(api_->DriverGetVersion(&version), "cuDriverGetVersion");
  return {version / 1000, version % 1000 / 10};
}

void CudaDriver::MakeCurrent(int device) {
  CUdevice d;
  Check(api_->DeviceGet(&d, device), "cuDeviceGet");
  CUcontext current = nullptr;
  Check(api_->CtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current) {
    CUdevice current_device = -1;
    if (api_->CtxGetDevice(&current_device) == 0 && current_device == d) return;
  }
  // Retained once per device and never released, so that calls from many
  // threads do not pile up references; torch retains the same context.
  static std::mutex mutex;
  static std::map<CUdevice, CUcontext> primary;
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> guard(mutex);
    CUcontext& slot = primary[d];
    if (!slot) Check(api_->DevicePrimaryCtxRetain(&slot, d), "cuDevicePrimaryCtxRetain");
    context = slot;
  }
  Check(api_->CtxSetCurrent(context), "cuCtxSetCurrent");
}

void CudaDriver::Launch(CUfunction f, std::array<unsigned, 3> grid, std::array<unsigned, 3> block,
                        unsigned shared_bytes, void* stream, void** params) const {
  Check(api_->LaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                           static_cast<CUstream>(stream), params, nullptr),
        "cuLaunchKernel");
}

int CudaDriver::registers(CUfunction f) const {
  int value = 0;
  Check(api_->FuncGetAttribute(&value, kFuncNumRegs, f), "cuFuncGetAttribute");
  return value;
}

void CudaDriver::set_max_dynamic_shared_bytes(CUfunction f, int bytes) const {
  Check(api_->FuncSetAttribute(f, kFuncMaxDynamicSharedBytes, bytes), "cuFuncSetAttribute");
}

std::optional<std::vector<size_t>> CudaDriver::param_sizes(CUfunction f) const {
  if (!api_->FuncGetParamInfo) return std::nullopt;
  std::vector<size_t> sizes;
  // CUDA_ERROR_INVALID_VALUE past the last parameter; a kernel's parameters
  // fit in 32,764 bytes, so a longer answer is not believed.
  for (size_t offset = 0, size = 0; api_->FuncGetParamInfo(f, sizes.size(), &offset, &size) == 0;) {
    if (sizes.size() >= 32764) return std::nullopt;
    sizes.push_back(size);
  }
  return sizes;
}

int CudaDriver::max_threads_per_block(CUfunction f) const {
  int value = 0;
  Check(api_->FuncGetAttribute(&value, kFuncMaxThreadsPerBlock, f), "cuFuncGetAttribute");
  return value;
}

CUdeviceptr CudaDriver::Allocate(size_t bytes) const {
  CUdeviceptr pointer = 0;
  Check(api_->MemAlloc(&pointer, bytes), "cuMemAlloc");
  return pointer;
}

void CudaDriver::Free(CUdeviceptr pointer) const { Check(api_->MemFree(pointer), "cuMemFree"); }

void CudaDriver::CopyToDevice(CUdeviceptr dst, const void* src, size_t bytes) const {
  Check(api_->MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

void CudaDriver::CopyToHost(void* dst, CUdeviceptr src, size_t bytes) const {
  Check(api_->MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

void CudaDriver::Synchronize(void* stream) const {
  Check(api_->StreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
}

std::shared_ptr<CudaModule> CudaModule::Load(const std::string& image) {
  const CudaDriver& driver = CudaDriver::Get();
  CUmodule module = nullptr;
  driver.Check(driver.api().ModuleLoadData(&module, image.c_str()), "cuModuleLoadData");
  return std::shared_ptr<CudaModule>(new CudaModule(module));
}

CudaModule::~CudaModule() {
  // Unloading at process exit may find the driver shut down: errors ignored.
  if (module_) CudaDriver::Get().api().ModuleUnload(module_);
}

CUfunction CudaModule::Function(const std::string& name) const {
  const CudaDriver& driver = CudaDriver::Get();
  CUfunction f = nullptr;
  driver.Check(driver.api().ModuleGetFunction(&f, module_, name.c_str()), "cuModuleGetFunction");
  return f;
}

}  // namespace sparsetir
