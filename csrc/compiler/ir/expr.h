// Expressions. Nodes are immutable and shared (shared_ptr<const ...>); they are
// built only through the checking factories below, so a node that exists is well
// typed. Variables are compared by identity (the pointer), never by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "support/source.h"

namespace sparsetir {

enum class ExprKind {
#define SPARSETIR_EXPR_KIND(name) k##name,
#include "ir/expr_kinds.def"
#undef SPARSETIR_EXPR_KIND
};

struct ExprNode {
  ExprNode(ExprKind kind, DataType dtype) : kind(kind), dtype(dtype) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const DataType dtype;
  Span span;  // where the parser saw it; may be undefined for compiler-made nodes

  template <typename T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }
};
using Expr = std::shared_ptr<const ExprNode>;

struct BufferNode;
using Buffer = std::shared_ptr<const BufferNode>;

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kIntImm;
  IntImmNode(DataType dtype, int64_t value) : ExprNode(kKind, dtype), value(value) {}
  const int64_t value;
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kFloatImm;
  FloatImmNode(DataType dtype, double value) : ExprNode(kKind, dtype), value(value) {}
  const double value;
};

// A named value: a function parameter, an iteration or loop variable, a let binding.
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kVar;
  VarNode(DataType dtype, std::string name) : ExprNode(kKind, dtype), name(std::move(name)) {}
  const std::string name;
};
using Var = std::shared_ptr<const VarNode>;

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kFloorDiv, kFloorMod, kMin, kMax,
  kEQ, kNE, kLT, kLE, kGT, kGE, kAnd, kOr,
};
const char* ToString(BinaryOp op);
bool IsComparison(BinaryOp op);
bool IsLogical(BinaryOp op);

struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBinary;
  BinaryNode(DataType dtype, BinaryOp op, Expr a, Expr b)
      : ExprNode(kKind, dtype), op(op), a(std::move(a)), b(std::move(b)) {}
  const BinaryOp op;
  const Expr a, b;
};

enum class UnaryOp { kNeg, kNot };

struct UnaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kUnary;
  UnaryNode(DataType dtype, UnaryOp op, Expr a) : ExprNode(kKind, dtype), op(op), a(std::move(a)) {}
  const UnaryOp op;
  const Expr a;
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kSelect;
  SelectNode(DataType dtype, Expr cond, Expr true_value, Expr false_value)
      : ExprNode(kKind, dtype),
        cond(std::move(cond)),
        true_value(std::move(true_value)),
        false_value(std::move(false_value)) {}
  const Expr cond, true_value, false_value;
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCast;
  CastNode(DataType dtype, Expr value) : ExprNode(kKind, dtype), value(std::move(value)) {}
  const Expr value;
};

// Math intrinsics and the sparse search used to locate a coordinate.
enum class Intrinsic {
  kExp, kLog, kSqrt, kPow, kAbs,
  // lower_bound(indices_buffer_handle, begin, end, coordinate) -> position of the
  // first element >= coordinate in indices[begin:end] (end if none). Made by lowering.
  kLowerBound,
  // lane_sum / lane_max / lane_min(value, lanes): `value` combined over the
  // `lanes` consecutive lanes (a power of two, at most a warp) of the caller's
  // group along threadIdx.x; every lane gets the result. CUDA only: made by
  // LowerLaneReductions (transforms/lower_lane_reductions.h) from a reduction
  // loop bound to threadIdx.x.
  kLaneSum, kLaneMax, kLaneMin,
  // lane_shuffle(value, source, lanes): the `value` of lane `source` of the
  // caller's group of `lanes` consecutive lanes, given to every lane of the
  // group (a broadcast). CUDA only; every lane of the group must reach it.
  kLaneShuffle,
  // horizontal_sum(buffer[..., first], lanes): the sum of the `lanes`
  // consecutive elements of a local buffer's last axis that start at the
  // named one (argument 0 names the span's first element; the call reads the
  // whole span). A vectorized loop over rows of such spans sums them into a
  // vector of row sums with in-register shuffles (codegen_cpu.cc), where the
  // spans summed one by one would each end in a chain of scalar additions.
  kHorizontalSum,
};
// The most lanes horizontal_sum takes (a span is summed in registers).
inline constexpr int64_t kMaxHorizontalSumLanes = 64;
inline bool IsLaneReduction(Intrinsic op) {
  return op == Intrinsic::kLaneSum || op == Intrinsic::kLaneMax || op == Intrinsic::kLaneMin;
}
// A lane operation exchanges values between the lanes of a warp.
inline bool IsLaneOperation(Intrinsic op) { return IsLaneReduction(op) || op == Intrinsic::kLaneShuffle; }
const char* ToString(Intrinsic op);

struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCall;
  CallNode(DataType dtype, Intrinsic op, std::vector<Expr> args)
      : ExprNode(kKind, dtype), op(op), args(std::move(args)) {}
  const Intrinsic op;
  const std::vector<Expr> args;
};

// Reads one element. Stage I: indices are coordinates; stage II: positions per
// axis; stage III: indices into the flat (varied-dimensions-flattened) buffer.
struct BufferLoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBufferLoad;
  BufferLoadNode(DataType dtype, Buffer buffer, std::vector<Expr> indices)
      : ExprNode(kKind, dtype), buffer(std::move(buffer)), indices(std::move(indices)) {}
  const Buffer buffer;
  const std::vector<Expr> indices;
};

// ---- Checking factories. They throw InternalError on ill-typed input: the
// ---- parser checks user input first and reports it as a ScriptError.
Expr MakeInt(int64_t value, DataType dtype = DataType::kInt32);
Expr MakeFloat(double value, DataType dtype = DataType::kFloat32);
Expr MakeBool(bool value);
Var MakeVar(const std::string& name, DataType dtype);
Expr MakeBinary(BinaryOp op, Expr a, Expr b);
Expr MakeUnary(UnaryOp op, Expr a);
Expr MakeSelect(Expr cond, Expr true_value, Expr false_value);
Expr MakeCast(DataType dtype, Expr value);
Expr MakeCall(Intrinsic op, std::vector<Expr> args, DataType dtype);
Expr MakeLoad(Buffer buffer, std::vector<Expr> indices);

// Shorthands used by passes.
inline Expr Add(Expr a, Expr b) { return MakeBinary(BinaryOp::kAdd, std::move(a), std::move(b)); }
inline Expr Sub(Expr a, Expr b) { return MakeBinary(BinaryOp::kSub, std::move(a), std::move(b)); }
inline Expr Mul(Expr a, Expr b) { return MakeBinary(BinaryOp::kMul, std::move(a), std::move(b)); }

// Appends the addends of a sum (`e` itself when it is no addition) to `out`.
void Addends(const Expr& e, std::vector<Expr>* out);

// Integer constant of the same dtype as `like` (int32 or int64).
Expr IntLike(int64_t value, const Expr& like);
// Widens a or b so both integer operands have the same width (int32 -> int64).
void UnifyIntegers(Expr* a, Expr* b);
// nullptr-safe: the value of an IntImm, if `e` is one.
const int64_t* AsConstInt(const Expr& e);

}  // namespace sparsetir
