// A compiled kernel: the pipeline, the contract and the module, each in its
// own place, put together by Build:
//  - the pipeline (lower.h) lowers the function to stage III and a backend
//    prints it for the target (codegen_cpu.h, codegen_cuda.h);
//  - the contract (contract.h) checks every call's arguments and sizes the
//    workspaces the host allocates;
//  - the module (module.h) runs the code: the dlopen'ed shared object on the
//    CPU, the SIMT emulator for a cuda kernel on host memory. A cuda kernel on
//    a GPU is launched by the extension (csrc/ops/cuda_launch.h) from source()
//    and LaunchDims().
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "codegen/abi.h"
#include "ir/function.h"
#include "runtime/contract.h"
#include "runtime/emulated_cuda_module.h"
#include "runtime/module.h"
#include "target.h"

namespace sparsetir {

class Kernel {
 public:
  // Lowers `f` (any stage) to stage III and generates code for `target`:
  //  - cpu: C++ built by the system compiler for the target's instruction
  //    set (at most once per content and target, see kernel_cache.h); the
  //    schedule, not this function, sizes vectors for the level;
  //  - cuda: CUDA C++ (codegen_cuda.h). Nothing is compiled here: a device
  //    image comes from NVRTC when a GPU runs it (the extension's CUDA layer),
  //    and Run() on host memory runs the same source under the SIMT emulator
  //    (built by the system compiler at its first use).
  static std::shared_ptr<Kernel> Build(const PrimFunc& f, const Target& target);

  const std::string& name() const { return name_; }
  const Target& target() const { return target_; }
  const std::string& source() const { return source_; }
  // cuda: the name of the kernel in source() (CudaKernelSymbol).
  const std::string& cuda_symbol() const { return cuda_symbol_; }
  // cuda: the launch for these arguments (scalars bound): grid x, y, z, then
  // block x, y, z; a dimension whose extent is not positive is 0 (no work).
  std::array<int64_t, 6> LaunchDims(const SparsetirArg* args) const;
  // Unique in the process, never reused (a freed kernel's address may be):
  // what per-kernel tables elsewhere key on.
  uint64_t id() const { return id_; }
  const PrimFunc& lowered() const { return lowered_; }
  // The parameters a call passes, in order (the workspaces, which the host
  // allocates, are not among them).
  std::vector<std::string> param_names() const;

  const Contract& contract() const { return contract_; }
  // The contract's (contract.h), then the alignment of the arguments that
  // vector accesses read or write.
  void Check(const std::vector<KernelArg>& args, bool contents = true) const;
  // The bytes the address of parameter `param` must be a multiple of (1: any):
  // a cuda kernel's vector accesses (codegen/vector_access.h) assume it.
  int64_t alignment(size_t param) const { return param < alignment_.size() ? alignment_[param] : 1; }
  const std::vector<size_t>& structure_params() const { return contract_.structure_params(); }
  const std::vector<size_t>& written_params() const { return contract_.written_params(); }

  // Checks (unless `check` is false: the caller just called Check), allocates
  // the workspaces, then runs. `launcher` runs parallel loops.
  void Run(const std::vector<KernelArg>& args, const SparsetirLauncher* launcher, bool check = true) const;
  // Runs packed arguments (every parameter of lowered(), workspaces
  // included, in order) without the checks: for callers that validated the
  // same contract themselves, such as the operators, which validate a
  // structure once per graph rather than on every call. cuda kernels run
  // under the SIMT emulator here (host memory).
  void RunUnchecked(const SparsetirArg* args, const SparsetirLauncher* launcher) const;

 private:
  std::string name_;
  std::string source_;
  std::string cuda_symbol_;
  PrimFunc lowered_;  // stage III
  Contract contract_;
  uint64_t id_ = 0;
  Target target_;
  std::shared_ptr<Module> module_;
  std::array<std::vector<Expr>, 6> launch_;  // cuda
  std::vector<int64_t> alignment_;           // cuda: per parameter, in bytes
};

// A serial launcher: runs every parallel loop on the calling thread.
const SparsetirLauncher* SerialLauncher();

}  // namespace sparsetir
