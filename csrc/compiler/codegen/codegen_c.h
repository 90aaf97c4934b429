// CPU code generation: a stage-III PrimFunc -> one C++ translation unit with an
// `extern "C"` entry over raw pointers and integers (codegen/abi.h). The code
// includes no torch header and links nothing: parallel loops go through the
// launcher that the host passes in. The CUDA backend (codegen_cuda.h) derives
// from CodegenC and overrides what differs: prelude, entry, loops (thread
// binding, no parallel or GCC vector loops), atomics and prefetch.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "ir/function.h"

namespace sparsetir {

// The most bytes a local / shared cache (cache_read, cache_write, rfactor) may
// hold: it is a stack array of the thread that runs the loop.
inline constexpr int64_t kMaxLocalCacheBytes = 256 * 1024;

// The C type a buffer element of `dtype` is stored as (float16 -> uint16_t).
const char* StorageType(DataType dtype);
// The C type an expression of `dtype` is computed in (float16 -> float).
const char* ValueType(DataType dtype);
// Buffers the kernel allocates itself hold 16-bit floats as float32.
bool Widened(const BufferNode* b);
// The C element type of a buffer's storage.
const char* BufferStorage(const BufferNode* b);

class CodegenC {
 public:
  virtual ~CodegenC() = default;
  // The whole translation unit.
  std::string Generate(const PrimFunc& f);

 protected:
  virtual void EmitPrelude();
  virtual void EmitEntry(const PrimFunc& f);
  void EmitStmt(const Stmt& s);
  // The statements whose code differs by target.
  virtual void EmitFor(const ForNode* loop);
  virtual void EmitAtomicAdd(const AtomicAddNode* n);
  virtual void EmitPrefetch(const PrefetchNode* n);
  // A vectorized loop with a power-of-two constant trip count whose body is one
  // store of contiguous or loop-invariant operands becomes a single statement
  // on GCC vector types (explicit SIMD). Returns false to fall back to a scalar
  // loop the C++ compiler may vectorize.
  bool TryEmitVectorLoop(const ForNode* loop);
  std::string VectorExpr(const Expr& e, const VarNode* lane, const std::string& vector_type, bool* ok);
  std::string Expr2C(const Expr& e);
  std::string Index(const Buffer& b, const std::vector<Expr>& indices);
  // The C identifier of an IR object: `wanted` when safe (codegen/identifiers.h),
  // else "v_" + wanted; made unique in the unit.
  std::string Name(const void* key, const std::string& wanted);
  std::string Fresh(const std::string& wanted);
  void Line(const std::string& text);

  // C declarations visible at the current point: they become the parameters of
  // an outlined function (a parallel task), restrict-qualified for pointers.
  struct ScopeEntry {
    std::string type;  // "float* __restrict__", "const int32_t", ...
    std::string name;
  };
  std::string ParamList(const std::vector<ScopeEntry>& scope) const;
  std::string ArgList(const std::vector<ScopeEntry>& scope) const;
  void EmitParallelFor(const ForNode* loop);
  const BufferNode* BalancingIndptr(const ForNode* loop);

  std::ostringstream out_;
  std::vector<std::string> functions_;  // outlined functions, in definition order
  std::vector<ScopeEntry> scope_;
  int indent_ = 0;
  int task_count_ = 0;
  std::map<const void*, std::string> names_;  // IR object -> C identifier
  std::set<std::string> taken_;
};

std::string CodegenCpu(const PrimFunc& f);

}  // namespace sparsetir
