// The operators' kernels: built-in scripts (kernels/*.py) specialized for a
// value dtype, an index dtype and the sizes that matter, scheduled by a CPU
// recipe and compiled at first use; then kept in a thread-safe table so a
// repeated call costs a lookup.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace sparsetir::ops {

// The folder holding the built-in scripts; the Python package sets it at import.
void SetKernelDirectory(const std::string& directory);

// What to build: kernels/<script>.py with "float32" -> value dtype and
// "int32" -> index dtype, scheduled by `recipe` with `sizes` specialized.
struct KernelRequest {
  std::string script;
  std::string recipe;
  at::ScalarType value_dtype;
  at::ScalarType index_dtype;
  std::map<std::string, int64_t> sizes;
  bool prefetch = true;  // RecipeOptions::prefetch
};

// A compiled operator kernel and the position of each parameter.
class OpKernel {
 public:
  OpKernel(std::shared_ptr<Kernel> kernel);
  const Kernel& kernel() const { return *kernel_; }
  size_t slot(const std::string& param) const;
  size_t arity() const { return slots_.size(); }

 private:
  std::shared_ptr<Kernel> kernel_;
  std::map<std::string, size_t> slots_;
};

// The kernel for `request`, compiled on first use (once, even when several
// threads ask at the same time).
std::shared_ptr<const OpKernel> GetOpKernel(const KernelRequest& request);

// One call of an operator kernel, its arguments set by parameter name. The
// caller has validated them against the kernel's contract (shapes, dtypes,
// structure), which is why the run skips the kernel's own checks.
class KernelCall {
 public:
  explicit KernelCall(const OpKernel& kernel);
  KernelCall& Set(const std::string& param, const at::Tensor& tensor);
  KernelCall& Set(const std::string& param, int64_t value);
  // `work` estimates the floating-point operations; small calls run on the
  // calling thread, where a parallel launch would cost more than the work.
  void Run(int64_t work) const;

 private:
  const OpKernel& kernel_;
  std::vector<SparsetirArg> args_;
  std::vector<bool> set_;
};

}  // namespace sparsetir::ops
