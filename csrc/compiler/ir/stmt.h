// Statements. Same rules as expressions: immutable, shared, built by factories.
#pragma once

#include <array>

#include <memory>
#include <string>
#include <vector>

#include "ir/attr.h"
#include "ir/buffer.h"
#include "ir/expr.h"

namespace sparsetir {

enum class StmtKind {
#define SPARSETIR_STMT_KIND(name) k##name,
#include "ir/stmt_kinds.def"
#undef SPARSETIR_STMT_KIND
};

struct StmtNode {
  explicit StmtNode(StmtKind kind) : kind(kind) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
  Span span;

  template <typename T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};
using Stmt = std::shared_ptr<const StmtNode>;

struct BufferStoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBufferStore;
  BufferStoreNode(Buffer buffer, std::vector<Expr> indices, Expr value)
      : StmtNode(kKind), buffer(std::move(buffer)), indices(std::move(indices)), value(std::move(value)) {}
  const Buffer buffer;
  const std::vector<Expr> indices;
  const Expr value;
};

struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kSeq;
  explicit SeqNode(std::vector<Stmt> stmts) : StmtNode(kKind), stmts(std::move(stmts)) {}
  const std::vector<Stmt> stmts;
};

enum class IterationRole { kSpatial, kReduction };

// Stage I: `with T.sp.iteration([I, J, K], "SRS", "name") as [i, j, k]:`.
// vars[t] ranges over the coordinates of iterators[t].
struct SparseIterationNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kSparseIteration;
  SparseIterationNode() : StmtNode(kKind) {}
  std::string name;
  std::vector<SparseIterator> iterators;
  std::string roles;  // one 'S' or 'R' per iterator
  std::vector<Var> vars;
  Stmt init;          // may be null
  Stmt body;
  AttrMap attrs;
};

enum class ForKind { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
// "serial", "parallel", "vectorized", "unroll", "thread_binding"
const char* ToString(ForKind kind);

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kFor;
  ForNode(Var var, Expr min, Expr extent, ForKind for_kind, Stmt body, std::string thread_tag)
      : StmtNode(kKind), var(std::move(var)), min(std::move(min)), extent(std::move(extent)),
        for_kind(for_kind), body(std::move(body)), thread_tag(std::move(thread_tag)) {}
  const Var var;
  const Expr min, extent;
  const ForKind for_kind;
  const Stmt body;
  const std::string thread_tag;  // kThreadBinding: "blockIdx.x", "threadIdx.x", ...
};

// The block axis a loop is bound to: 0, 1, 2 for threadIdx.x, y, z; -1 for
// any other loop (serial, or bound to blockIdx).
int ThreadAxis(const ForNode* loop);

// A named region: the statement(s) one sparse iteration (or its init) lowered
// to. Schedules find loops through it ("the loops around block csrmm");
// code generation emits its body as is.
struct BlockNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBlock;
  BlockNode(std::string name, Stmt body) : StmtNode(kKind), name(std::move(name)), body(std::move(body)) {}
  const std::string name;
  const Stmt body;
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kIfThenElse;
  IfThenElseNode(Expr cond, Stmt then_case, Stmt else_case)
      : StmtNode(kKind), cond(std::move(cond)), then_case(std::move(then_case)), else_case(std::move(else_case)) {}
  const Expr cond;
  const Stmt then_case, else_case;  // else_case may be null
};

struct LetNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kLet;
  LetNode(Var var, Expr value, Stmt body)
      : StmtNode(kKind), var(std::move(var)), value(std::move(value)), body(std::move(body)) {}
  const Var var;
  const Expr value;
  const Stmt body;
};

// T.assume_buffer_domain(buf, [lo, hi]): every element of buf lies in [lo, hi].
// A fact for simplification; the runtime checks it on structure arrays.
struct AssumeNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAssume;
  AssumeNode(Buffer buffer, Expr lo, Expr hi)
      : StmtNode(kKind), buffer(std::move(buffer)), lo(std::move(lo)), hi(std::move(hi)) {}
  const Buffer buffer;
  const Expr lo, hi;
};

// A buffer that lives for the duration of `body` only (a cache in "local" or
// "shared" scope, made by cache_read / cache_write). Printed as an assignment
// `X = T.alloc_buffer(shape, dtype, scope=...)` followed by the body.
struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAllocate;
  AllocateNode(Buffer buffer, Stmt body) : StmtNode(kKind), buffer(std::move(buffer)), body(std::move(body)) {}
  const Buffer buffer;
  const Stmt body;
};

// T.prefetch(B[v3, 0], 32): a hint that `extent` consecutive elements of a
// buffer, starting at the element `address` reads, will be read soon. It has
// no effect on results; the CPU backend issues one cache-line prefetch per 64
// bytes. `address` is a BufferLoad so that passes rewriting loads (flattening
// a buffer, substituting a variable) rewrite the address with them.
// `cache_level` is the nearest cache the lines are brought into: 1 (L1 and
// every level below it) or 2 (L2 and below, not L1), printed
// T.prefetch(B[v3, 0], 32, cache_level=2).
struct PrefetchNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kPrefetch;
  PrefetchNode(Expr address, int64_t extent, int cache_level)
      : StmtNode(kKind), address(std::move(address)), extent(extent), cache_level(cache_level) {}
  const Expr address;
  const int64_t extent;
  const int cache_level;
};

// T.atomic_add(C[i, k], value): C[i, k] += value as one indivisible update,
// for outputs that several parallel iterations may add into at once (a
// composable format whose rows map onto the same output row). `target` is the
// BufferLoad of the element, so that passes rewriting loads (positions,
// flattening, substitution) rewrite it with them.
struct AtomicAddNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAtomicAdd;
  AtomicAddNode(Expr target, Expr value) : StmtNode(kKind), target(std::move(target)), value(std::move(value)) {}
  const Expr target;
  const Expr value;
};

// T.sp.mma_sync("m16n8k16", Acc[r, c], A[..], B[..], a_rows, a_cols,
// b_rows, b_cols): a warp's tensor-core multiply-accumulate of one tile,
// Acc[r:r+16, c:c+8] += A(16 x 16) * B(16 x 8). A and B are named by their
// first elements and the elements between their consecutive rows and
// columns (a row-major tile in a buffer's last two dimensions: its last
// dimension's extent and 1). Acc is a row-major tile in the last two
// dimensions of its buffer. A and B are float16 or bfloat16 and Acc
// accumulates in float32 (AccumulatesInFloat32; on cuda, a fragment spread
// over the warp's lanes, lower_mma_fragments.h). The operands are BufferLoads
// so that passes rewriting loads rewrite them.
struct MmaNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kMma;
  MmaNode(std::string shape, Expr acc, Expr a, Expr b, std::array<Expr, 4> strides)
      : StmtNode(kKind), shape(std::move(shape)), acc(std::move(acc)), a(std::move(a)), b(std::move(b)),
        strides(std::move(strides)) {}
  const std::string shape;
  const Expr acc;
  const Expr a;
  const Expr b;
  // Elements between A's rows, A's columns, B's rows and B's columns.
  const std::array<Expr, 4> strides;
};

// T.sp.sync_threads(): every thread of the block waits here until all the
// block's threads have arrived, and sees what they wrote to shared buffers
// before it (__syncthreads). A stage-III script writes it between the
// threads' writes to a shared buffer it allocates (T.alloc_buffer(...,
// scope="shared")) and their reads of each other's elements. Every thread of
// the block must reach it alike: lower_shared_caches refuses one under a
// condition or a loop that depends on the thread.
struct BarrierNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBarrier;
  BarrierNode() : StmtNode(kKind) {}
};

// The one tile shape the CUDA backend lowers: 16 x 8 outputs, 16 deep.
constexpr const char* kMmaShape = "m16n8k16";
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16;

Stmt MakeStore(Buffer buffer, std::vector<Expr> indices, Expr value);
Stmt MakeAllocate(Buffer buffer, Stmt body);
// Flattens nested sequences; a single statement is returned as is.
Stmt MakeSeq(std::vector<Stmt> stmts);
Stmt MakeIteration(SparseIterationNode node);
Stmt MakeFor(Var var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "");
Stmt MakeBlock(std::string name, Stmt body);
Stmt MakeIf(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt MakeLet(Var var, Expr value, Stmt body);
Stmt MakeAssume(Buffer buffer, Expr lo, Expr hi);
Stmt MakePrefetch(Expr address, int64_t extent, int cache_level = 1);
Stmt MakeBarrier();
// Checks that target is a BufferLoad of a floating-point buffer and value has its dtype.
Stmt MakeAtomicAdd(Expr target, Expr value);
// True if an mma can accumulate into `buffer` in float32: a float32 buffer,
// or a 16-bit one in local scope (kept in float32 registers, rounded once
// when it is stored).
bool AccumulatesInFloat32(const BufferNode* buffer);
// Checks the shape, that the operands are BufferLoads (a float32 accumulator
// of at least two dimensions, same-dtype 16-bit multiplicands) and that the
// strides are integers.
Stmt MakeMma(std::string shape, Expr acc, Expr a, Expr b, std::array<Expr, 4> strides);

}  // namespace sparsetir
