// The operators' kernels: built-in scripts (kernels/*.py) specialized for a
// value dtype, an index dtype and the sizes that matter, scheduled by the
// recipe of their target (recipes/cpu_recipes.h, recipes/cuda_recipes.h) and
// compiled at first use; then kept in a thread-safe table so a repeated call
// costs a lookup. A cuda kernel runs on CUDA tensors through the driver
// (cuda_launch.h) and on CPU tensors under the SIMT emulator.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "recipes/cpu_recipes.h"
#include "runtime/kernel.h"
#include "schedule/schedule.h"

namespace sparsetir::ops {

// The folder holding the built-in scripts; the Python package sets it at import.
void SetKernelDirectory(const std::string& directory);
// The text of kernels/<name>.py.
std::string ReadKernelScript(const std::string& name);
// A built-in script's text with the value and index dtypes put in for its
// "float32" and "int32", and the accumulator's (AccumulatorOf the values')
// for T.float32 written as a name: the one place a dtype is substituted into
// a built-in script (Python's kernel_script asks for this too).
std::string PutDtypes(std::string text, DataType value_dtype, DataType index_dtype);
// kernels/<name>.py through PutDtypes.
std::string KernelScriptFor(const std::string& name, DataType value_dtype, DataType index_dtype);

// What to build: kernels/<script>.py with "float32" -> value dtype and
// "int32" -> index dtype, scheduled by `recipe` with `sizes` specialized.
struct KernelRequest {
  std::string script;
  std::string recipe;
  at::ScalarType value_dtype;
  at::ScalarType index_dtype;
  std::map<std::string, int64_t> sizes;
  GatherPrefetch prefetch = GatherPrefetch::kToL1;  // RecipeOptions::prefetch (cpu)
  // cuda, or the cpu level, by default this CPU's (which raises a ValueError
  // naming $SPARSETIR_CPU_ISA when that names a level this CPU cannot run).
  Target target = Target::HostCpu();
};

// True when SPARSETIR_EMULATE_CUDA=1: operators called on CPU tensors run
// their cuda kernels (GPU recipes, CUDA source) under the SIMT emulator
// wherever a cuda recipe exists, so the CUDA path is tested without a GPU.
bool EmulateCuda();

// The target whose kernels run an operator on `t`'s device: cuda for CUDA
// tensors, and for CPU tensors under EmulateCuda() when `recipe` has a cuda
// schedule; else this CPU's level (Target::HostCpu()).
Target TargetFor(const at::Tensor& t, const std::string& recipe);

// True where a CPU kernel for 16-bit values would sum an output tile of
// `tile` elements in the 16-bit output itself (the tile is too large for the
// recipes' float32 local one, kMaxLocalTile), rounding at every non-zero: the
// operator then computes on float32 copies and rounds once.
bool AccumulatesInNarrowOutput(at::ScalarType dtype, const Target& target, int64_t tile);

// A compiled operator kernel and the position of each parameter.
class OpKernel {
 public:
  OpKernel(std::shared_ptr<Kernel> kernel);
  const Kernel& kernel() const { return *kernel_; }
  std::shared_ptr<Kernel> shared() const { return kernel_; }
  size_t slot(const std::string& param) const;
  size_t arity() const { return slots_.size(); }

 private:
  std::shared_ptr<Kernel> kernel_;
  std::map<std::string, size_t> slots_;
};

// The scheduled function of `request` (before lowering): what GetOpKernel
// compiles, for callers that only generate code (cross-compile checks).
PrimFunc ScheduledOpFunction(const KernelRequest& request);
// The recipe's schedule of a request: its function is what the kernel is
// built from, its trace what st.explain prints and Python replays.
Schedule ScheduleOpKernel(const KernelRequest& request);

// The kernel for `request`, compiled on first use (once, even when several
// threads ask at the same time).
std::shared_ptr<const OpKernel> GetOpKernel(const KernelRequest& request);

// One call of an operator kernel, its arguments set by parameter name. The
// caller has validated them against the kernel's contract (shapes, dtypes,
// structure), which is why the run skips the kernel's own checks.
class KernelCall {
 public:
  explicit KernelCall(const OpKernel& kernel);
  // Tensors on the CPU, or on one CUDA device for a cuda kernel.
  KernelCall& Set(const std::string& param, const at::Tensor& tensor);
  KernelCall& Set(const std::string& param, int64_t value);
  // `work` estimates the floating-point operations; small calls run on the
  // calling thread, where a parallel launch would cost more than the work.
  void Run(int64_t work) const;

 private:
  void RunOnHost(int64_t work) const;

  const OpKernel& kernel_;
  std::vector<SparsetirArg> args_;
  std::vector<at::Tensor> tensors_;  // the tensor arguments (undefined for scalars), for the race check
  std::vector<bool> set_;
  bool has_tensor_ = false;
  int device_ = -1;  // the CUDA device of the tensors, -1 for the CPU
};

}  // namespace sparsetir::ops
