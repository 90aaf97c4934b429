// A Module runs a kernel's generated code: Launch takes the packed arguments
// (every parameter of the stage-III function, workspaces included, in order)
// and the launcher that runs parallel loops. Kernel (runtime/kernel.h) holds
// one and knows nothing of how it runs:
//  - CpuModule: the shared object the system compiler built, opened with
//    dlopen (RTLD_LOCAL, so every module's `sparsetir_main` stays private);
//  - EmulatedCudaModule (emulated_cuda_module.h): CUDA source run on the CPU
//    under the SIMT emulator.
// A CUDA kernel on a GPU is launched by the extension's CUDA layer, which owns
// the device, the stream and the NVRTC image (csrc/ops/cuda_launch.h).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "codegen/abi.h"

namespace sparsetir {

// A run stopped by what the kernel computed from its input (the entry's status,
// codegen/abi.h); Kernel names the kernel in the error it raises.
struct KernelStatusError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Module {
 public:
  virtual ~Module() = default;
  virtual void Launch(const SparsetirArg* args, const SparsetirLauncher* launcher) const = 0;
};

class CpuModule : public Module {
 public:
  // nullptr (with *error set) when the file cannot be loaded or lacks the entry.
  static std::shared_ptr<CpuModule> Load(const std::string& path, std::string* error);
  ~CpuModule() override;
  CpuModule(const CpuModule&) = delete;
  CpuModule& operator=(const CpuModule&) = delete;

  void Launch(const SparsetirArg* args, const SparsetirLauncher* launcher) const override;
  SparsetirEntry entry() const { return entry_; }
  const std::string& path() const { return path_; }

 private:
  CpuModule() = default;
  void* handle_ = nullptr;
  SparsetirEntry entry_ = nullptr;
  std::string path_;
};

}  // namespace sparsetir
