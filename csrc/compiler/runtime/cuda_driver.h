// The CUDA driver API, opened at its first use (libcuda.so.1 by dlopen) and
// never linked, so the extension imports on machines without a driver. About
// twenty functions, declared here by hand; every failing call throws a
// UserError naming the function and the driver's error.
//
// Contexts: a device's primary context, the one torch uses, is made current
// before modules load or kernels launch, so our kernels share torch's
// context, memory and streams.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sparsetir {

typedef struct CUfunc_st* CUfunction;
typedef struct CUmod_st* CUmodule;
typedef unsigned long long CUdeviceptr;  // a device address, as in cuda.h

class CudaDriver {
 public:
  // False (never throws) when kernels cannot run: no libcuda.so.1, cuInit
  // failing, or no device; `*why` says which.
  static bool Available(std::string* why);
  // The process-wide instance; throws where Available() is false.
  static CudaDriver& Get();

  int device_count() const;
  // The driver's CUDA version, e.g. {13, 0} (cuDriverGetVersion).
  std::pair<int, int> driver_version() const;
  std::pair<int, int> compute_capability(int device) const;
  // The warps the device holds at once: multiprocessors x warps each.
  int resident_warps(int device) const;
  // Makes `device`'s primary context current on this thread, unless the
  // current context already belongs to it. Each primary context is retained
  // once and kept for the life of the process.
  void MakeCurrent(int device);
  // Launches `f` (params: the address of each argument) on `stream`
  // (a CUstream; nullptr is the legacy default stream).
  void Launch(CUfunction f, std::array<unsigned, 3> grid, std::array<unsigned, 3> block, unsigned shared_bytes,
              void* stream, void** params) const;
  // Registers per thread, and the most threads a block of `f` may have.
  int registers(CUfunction f) const;
  int max_threads_per_block(CUfunction f) const;
  // Lets a launch of `f` have up to `bytes` of dynamic shared memory (past
  // the 48 KiB every kernel may have without asking).
  void set_max_dynamic_shared_bytes(CUfunction f, int bytes) const;
  // The size of each of `f`'s parameters as compiled (cuFuncGetParamInfo);
  // nullopt with a driver older than CUDA 12.4, which cannot tell.
  std::optional<std::vector<size_t>> param_sizes(CUfunction f) const;

  // Plain device memory in the current context, for tests and tools: torch
  // owns the memory of real operands.
  CUdeviceptr Allocate(size_t bytes) const;
  void Free(CUdeviceptr pointer) const;
  void CopyToDevice(CUdeviceptr dst, const void* src, size_t bytes) const;
  void CopyToHost(void* dst, CUdeviceptr src, size_t bytes) const;
  // Waits for `stream` (a CUstream; nullptr is the legacy default stream).
  void Synchronize(void* stream) const;

  // The bound driver functions (defined in cuda_driver.cc).
  struct Api;
  const Api& api() const { return *api_; }
  // Throws naming `what` unless `result` is CUDA_SUCCESS.
  void Check(int result, const char* what) const;

 private:
  CudaDriver();
  const Api* api_;
};

// A module (CUBIN or PTX image) loaded into the current context; unloaded
// when the last reference goes.
class CudaModule {
 public:
  // Loads `image`, a CUBIN or NUL-free PTX text (the driver compiles PTX for
  // the device); throws a compile UserError with the driver's error.
  static std::shared_ptr<CudaModule> Load(const std::string& image);
  ~CudaModule();
  // The `extern "C"` kernel `name`; throws when the module has none.
  CUfunction Function(const std::string& name) const;

 private:
  explicit CudaModule(CUmodule module) : module_(module) {}
  CUmodule module_;
};

}  // namespace sparsetir
