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
#include <memory>
#include <string>
#include <utility>

namespace sparsetir {

typedef struct CUfunc_st* CUfunction;
typedef struct CUmod_st* CUmodule;

class CudaDriver {
 public:
  // False (never throws) when kernels cannot run: no libcuda.so.1, cuInit
  // failing, or no device; `*why` says which.
  static bool Available(std::string* why);
  // The process-wide instance; throws where Available() is false.
  static CudaDriver& Get();

  int device_count() const;
  std::pair<int, int> compute_capability(int device) const;
  // Makes `device`'s primary context current on this thread.
  void MakeCurrent(int device);
  // Launches `f` (params: the address of each argument) on `stream`
  // (a CUstream; nullptr is the legacy default stream).
  void Launch(CUfunction f, std::array<unsigned, 3> grid, std::array<unsigned, 3> block, unsigned shared_bytes,
              void* stream, void** params) const;
  int registers(CUfunction f) const;
  int max_threads_per_block(CUfunction f) const;

  struct Api;
  const Api& api() const { return *api_; }
  // Throws naming `what` unless `result` is CUDA_SUCCESS.
  void Check(int result, const char* what) const;

 private:
  CudaDriver();
  const Api* api_;
};

// A module (CUBIN or PTX image) loaded into the current context.
class CudaModule {
 public:
  static std::shared_ptr<CudaModule> Load(const std::string& image);
  ~CudaModule();
  CUfunction Function(const std::string& name) const;

 private:
  explicit CudaModule(CUmodule module) : module_(module) {}
  CUmodule module_;
};

}  // namespace sparsetir
