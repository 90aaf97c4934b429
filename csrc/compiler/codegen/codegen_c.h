// The C-like printer both backends share: a stage-III PrimFunc -> one C++
// translation unit. It prints what every target writes the same way (names,
// expressions, buffer accesses, stores, branches, lets, local arrays, 16-bit
// conversions, atomics through the prelude's functions) and leaves a hook per
// statement kind whose code differs by target:
//  - the prelude and the entry point (EmitPrelude, EmitEntry);
//  - loops (EmitFor): the CPU backend outlines parallel loops for the host's
//    launcher and writes explicit SIMD (codegen_cpu.h); the CUDA backend binds
//    loops to the hardware indices (codegen_cuda.h);
//  - prefetch hints (EmitPrefetch): nothing unless a backend has them.
// A backend derives from CodegenC and overrides only these.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/function.h"
#include "ir/substitute.h"

namespace sparsetir {

// The most bytes a local / shared cache (cache_read, cache_write, rfactor) may
// hold: it is a stack array of the thread that runs the loop.
inline constexpr int64_t kMaxLocalCacheBytes = 256 * 1024;

// The C type a buffer element of `dtype` is stored as (float16 -> uint16_t).
const char* StorageType(DataType dtype);
// The C type an expression of `dtype` is computed in (float16 -> float).
const char* ValueType(DataType dtype);
// Buffers the kernel allocates itself hold 16-bit floats as float32, except
// shared caches: a GPU's shared memory is scarce, and tensor-core operands are
// read from it as 16-bit values.
bool Widened(const BufferNode* b);
// The C element type of a buffer's storage.
const char* BufferStorage(const BufferNode* b);

class CodegenC {
 public:
  virtual ~CodegenC() = default;

  // Whether integer division by `divisor` needs IntegerDivision's checks: not
  // for a constant other than 0 and -1.
  static bool DivisorMayTrap(const Expr& divisor);

 protected:
  // The whole translation unit: a banner, the prelude, then the functions
  // EmitEntry (and the statements it emits) put in functions_.
  std::string Generate(const PrimFunc& f);

  // ---- the hooks of a backend
  virtual void EmitPrelude() = 0;
  virtual void EmitEntry(const PrimFunc& f) = 0;
  virtual void EmitFor(const ForNode* loop) = 0;
  virtual void EmitPrefetch(const PrefetchNode* n) {}
  // A warp's tile multiply-accumulate: only the CUDA target has tensor cores.
  virtual void EmitMma(const MmaNode* n);
  // T.sp.sync_threads(): only the CUDA target has a block of threads.
  virtual void EmitBarrier();
  // A lane reduction (Intrinsic::kLaneSum & co.): only the CUDA target has lanes.
  virtual std::string LaneReduction(const CallNode* n);
  // A lane's value given to its group (Intrinsic::kLaneShuffle): cuda only.
  virtual std::string LaneShuffle(const CallNode* n);
  // An integer division or remainder (op kDiv: C's truncating one, kFloorDiv,
  // kFloorMod) of a divisor that may be 0 or -1 at run time; by default the
  // prelude's functions as they are.
  virtual std::string IntegerDivision(BinaryOp op, const std::string& a, const std::string& b);

  // The span of T.sp.horizontal_sum, checked: a constant power of two that
  // stays within the buffer's last axis.
  static int64_t HorizontalSumLanes(const CallNode* n);

  // ---- shared printing
  void EmitStmt(const Stmt& s);
  // A sequential loop, preceded by `pragma` unless empty.
  void EmitSerialFor(const ForNode* loop, const std::string& pragma);
  void EmitAtomicAdd(const AtomicAddNode* n);
  // A local or shared cache; the CUDA target declares shared ones __shared__.
  virtual void EmitAllocate(const AllocateNode* n);
  std::string Expr2C(const Expr& e);
  std::string Index(const Buffer& b, const std::vector<Expr>& indices);
  // A load's element as stored (before any 16-bit conversion): the buffer
  // indexed, or what load_accesses_ names in its place.
  std::string Access(const BufferLoadNode* n);
  // The C identifier of an IR object: `wanted` when safe (codegen/identifiers.h),
  // else "v_" + wanted; made unique in the unit.
  std::string Name(const void* key, const std::string& wanted);
  std::string Fresh(const std::string& wanted);
  void Line(const std::string& text);

  // C declarations visible at the current point (a backend that outlines a
  // loop body passes them to the outlined function).
  struct ScopeEntry {
    std::string type;  // "float* __restrict__", "const int32_t", ...
    std::string name;
  };

  std::ostringstream out_;
  std::vector<std::string> functions_;  // the unit's functions, in definition order
  std::vector<ScopeEntry> scope_;
  // The values of the let-bound variables in scope, each in terms of the
  // function's parameters (earlier lets substituted): what a backend needs
  // to evaluate an expression outside the body (a CUDA launch extent).
  VarMap lets_;
  int indent_ = 0;
  std::map<const void*, std::string> names_;  // IR object -> C identifier
  // Loads and store targets a backend prints as something else while it
  // emits a loop (the cuda target's vector accesses: an element of a vector
  // in registers).
  std::map<const BufferLoadNode*, std::string> load_accesses_;
  std::map<const BufferStoreNode*, std::string> store_targets_;
  std::set<std::string> taken_;
};

}  // namespace sparsetir
