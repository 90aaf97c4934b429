// A compiled kernel and the contract of its arguments.
//
// The contract comes from the compiled function itself: each handle parameter
// is bound to a stage-III buffer whose shape is an expression of the scalar
// parameters (and, for ragged formats, of indptr values); structure arrays carry
// the facts the kernel relies on (T.assume_buffer_domain), and indptr arrays must
// also start at 0, never decrease and end at nnz. Every call is checked against
// it before the kernel runs, so a bad call is a ValueError naming the argument,
// never an out-of-bounds access.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "codegen/abi.h"
#include "ir/function.h"
#include "runtime/module.h"
#include "target.h"

namespace sparsetir {

// One call argument, described without torch (the extension fills it in).
struct KernelArg {
  enum class Kind { kMissing, kTensor, kInt, kOther };
  Kind kind = Kind::kMissing;
  std::string type_name;         // for messages: "str", "float", "torch.int64", ...
  // kTensor
  void* data = nullptr;
  DataType dtype = DataType::kVoid;  // kVoid: a dtype the compiler has no name for
  std::vector<int64_t> shape;
  bool contiguous = true;
  std::string device = "cpu";
  // kInt
  int64_t int_value = 0;
};

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

  // Throws an ArgumentError (ValueError in Python) naming the parameter.
  // Tensors must be on the target's device: "cpu" for a cpu kernel; for a
  // cuda kernel all on one device, "cpu" (run under the emulator) or
  // "cuda:N", in which case the caller passes host copies of the structure
  // arrays (structure_params) as their data, since Check reads them.
  // `contents` = false skips reading the structure arrays' elements (indptr
  // order, index ranges: O(nnz)) for a caller that knows these very arrays,
  // unchanged, passed the full check with the same scalar arguments; every
  // kind, dtype and shape is still checked.
  void Check(const std::vector<KernelArg>& args, bool contents = true) const;
  // The parameters whose elements Check reads (indptr and index arrays), in
  // parameter order.
  const std::vector<size_t>& structure_params() const { return structure_params_; }
  // The parameters whose tensors the kernel writes (its outputs), in parameter
  // order: the caller bumps their autograd version counters and refuses
  // outputs that overlap another argument.
  const std::vector<size_t>& written_params() const { return written_params_; }
  // Checks (unless `check` is false: the caller just called Check), then
  // runs. `launcher` runs parallel loops.
  void Run(const std::vector<KernelArg>& args, const SparsetirLauncher* launcher, bool check = true) const;
  // Runs packed arguments (every parameter of lowered(), workspaces
  // included, in order) without the checks: for callers
  // that validated the same contract themselves, such as the operators, which
  // validate a structure once per graph rather than on every call.
  // cuda kernels run under the SIMT emulator here (host memory).
  void RunUnchecked(const SparsetirArg* args, const SparsetirLauncher* launcher) const;

 private:
  std::map<const BufferNode*, std::pair<Expr, Expr>> DomainFacts() const;  // assume_buffer_domain
  std::vector<size_t> StructureParams() const;
  // Buffers whose contents another buffer's shape reads (A over J_indptr[m]):
  // checked and bound before the shapes that read them.
  std::set<const BufferNode*> ShapeReadBuffers() const;
  bool IsStructure(const Buffer& b) const;
  std::vector<size_t> WrittenParams() const;
  // A host-allocated workspace (transforms/lift_workspaces.h): its parameter
  // and buffer.
  struct Workspace {
    size_t param;
    Buffer buffer;
  };
  std::vector<Workspace> Workspaces() const;
  std::vector<std::vector<uint64_t>> AllocateWorkspaces(const std::vector<KernelArg>& args) const;

  struct IndptrRule {
    Var handle;
    Expr nnz;  // may be null
  };
  std::string name_;
  std::string source_;
  PrimFunc lowered_;                 // stage III
  std::vector<IndptrRule> indptr_rules_;
  std::vector<size_t> written_params_;
  std::vector<Workspace> workspaces_;  // the last parameters of lowered_
  size_t call_params_ = 0;             // the parameters a caller passes: all but the workspaces
  // The assume_buffer_domain facts of lowered_, found once at build (Check
  // runs on every call).
  std::map<const BufferNode*, std::pair<Expr, Expr>> domain_;
  std::vector<size_t> structure_params_;
  std::set<const BufferNode*> shape_read_;
  uint64_t id_ = 0;
  // cpu: the kernel; cuda: the emulated kernel, built at the first Run.
  mutable std::shared_ptr<Module> module_;
  Target target_;
  std::array<std::vector<Expr>, 6> launch_;  // cuda
  std::string emulated_source_;               // cuda: emulator header + source + emulator entry
  mutable std::once_flag emulated_once_;
};

// A serial launcher: runs every parallel loop on the calling thread.
const SparsetirLauncher* SerialLauncher();

// How many cuda kernels this process ran under the SIMT emulator (tests).
std::atomic<int64_t>& EmulatedRuns();

}  // namespace sparsetir
