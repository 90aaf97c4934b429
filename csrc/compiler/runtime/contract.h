// The contract of a kernel's arguments, read from its stage-III function:
// each handle parameter is bound to a buffer whose shape is an expression of
// the scalar parameters (and, for ragged formats, of indptr values);
// structure arrays carry the facts the kernel relies on
// (T.assume_buffer_domain), and indptr arrays must also start at 0, never
// decrease and end at nnz. Every call is checked against it before the kernel
// runs, so a bad call is a ValueError naming the argument, never an
// out-of-bounds access. The contract also sizes the workspaces the host
// allocates (transforms/lift_workspaces.h) and evaluates the scalar
// expressions of a launch.
//
// The check reads structure arrays through host pointers: for a kernel whose
// data lives on a device, the caller passes host copies of the structure
// arrays (structure_params(); the operators keep one copy per graph).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/abi.h"
#include "ir/function.h"
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

// A varied iterator's indptr array and the nnz it must end at (may be null).
struct IndptrRule {
  Var handle;
  Expr nnz;
};

class Contract {
 public:
  Contract() = default;
  // `name` names the kernel in messages; `rules` come from the iterators of
  // the function before lowering (a stage-III script has none: then only the
  // domain facts are checked).
  Contract(std::string name, PrimFunc lowered, std::vector<IndptrRule> rules, Target target);

  // Throws an ArgumentError (ValueError in Python) naming the parameter.
  // Tensors must be on the target's device: "cpu" for a cpu kernel; for a
  // cuda kernel all on one device, "cpu" (run under the emulator) or
  // "cuda:N", in which case the caller passes host copies of the structure
  // arrays as their data. `contents` = false skips reading the structure
  // arrays' elements (indptr order, index ranges: O(nnz)) for a caller that
  // knows these very arrays, unchanged, passed the full check with the same
  // scalar arguments; every kind, dtype and shape is still checked.
  void Check(const std::vector<KernelArg>& args, bool contents = true) const;

  // The parameters a call passes, in order: all but the workspaces, which
  // come last.
  size_t call_params() const { return call_params_; }
  // The parameters whose elements Check reads (indptr and index arrays).
  const std::vector<size_t>& structure_params() const { return structure_params_; }
  // The parameters whose tensors the kernel writes (its outputs).
  const std::vector<size_t>& written_params() const { return written_params_; }
  // Zeroed host memory for each workspace, in parameter order, sized from
  // these (checked) arguments; 8-byte aligned.
  std::vector<std::vector<uint64_t>> AllocateWorkspaces(const std::vector<KernelArg>& args) const;
  // The workspaces' parameters, in order.
  std::vector<size_t> workspace_params() const;
  // Expressions of the scalar parameters, with the scalars taken from packed
  // arguments (parameter order), bound once for all of them.
  std::vector<int64_t> EvalScalars(const std::vector<Expr>& exprs, const SparsetirArg* args) const;

 private:
  struct Workspace {
    size_t param;
    Buffer buffer;
  };
  std::map<const BufferNode*, std::pair<Expr, Expr>> DomainFacts() const;  // assume_buffer_domain
  // Buffers whose contents another buffer's shape reads (A over J_indptr[m]):
  // checked and bound before the shapes that read them.
  std::set<const BufferNode*> ShapeReadBuffers() const;
  bool IsStructure(const Buffer& b) const;
  std::vector<size_t> StructureParams() const;
  std::vector<size_t> WrittenParams() const;
  std::vector<Workspace> Workspaces() const;
  // A loop whose trip count depends on the scalar arguments alone (m * n after
  // a fuse): checked at every call to fit its index's type.
  struct LoopExtent {
    std::string loop;
    Expr extent;
    DataType dtype;
  };
  std::vector<LoopExtent> ScalarLoopExtents() const;
  // An index array the kernel looks coordinates up in by binary search
  // (lower_bound over indices[indptr[r]:indptr[r + 1]], lower_sparse_iter):
  // each row's segment must be sorted, or a lookup misses what is there.
  struct SearchedRows {
    const VarNode* indices;
    const BufferNode* indptr;
  };
  std::vector<SearchedRows> Searches() const;

  std::string name_;
  PrimFunc func_;  // stage III
  std::vector<IndptrRule> indptr_rules_;
  Target target_;
  // Found once (Check runs on every call).
  std::map<const BufferNode*, std::pair<Expr, Expr>> domain_;
  std::set<const BufferNode*> shape_read_;
  std::vector<size_t> structure_params_;
  std::vector<size_t> written_params_;
  std::vector<Workspace> workspaces_;  // the last parameters
  std::vector<LoopExtent> loop_extents_;
  std::vector<SearchedRows> searches_;
  size_t call_params_ = 0;
};

}  // namespace sparsetir
