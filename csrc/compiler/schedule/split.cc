// split: one loop becomes a nest of loops whose extents are the factors.
//
// Before:  for k in T.serial(128): body(k)
// After:   k_0, k_1 = sch.split("k", factors=[None, 16])
//          for k_0 in T.serial(8):
//              for k_1 in T.serial(16): body(k_0 * 16 + k_1)
// When the factors do not divide the extent, the body is guarded by
// `if k_0 * 16 + k_1 < extent`; where the inner factors' product divides a
// constant extent, by the outer parts alone (`k_0 < extent / 16`), so that
// the inner loops always run whole: a thread's vector of features, or a
// cache's window of them, never stops part way.
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

// The condition that keeps the split parts `vars` (of extents `sizes`)
// within `extent`: the combined index below it, or, where the product P of
// the innermost parts' extents divides a constant extent, the outer parts'
// index below extent / P (the same condition, since the inner parts add
// less than P), naming as few parts as it can.
Expr SplitGuard(const std::vector<Var>& vars, const std::vector<Expr>& sizes, const Expr& extent) {
  size_t outer_parts = vars.size();
  int64_t inner = 1, whole_inner = 1;
  if (const int64_t* constant = AsConstInt(extent)) {
    for (size_t t = vars.size(); t-- > 1;) {
      inner *= *AsConstInt(sizes[t]);
      if (*constant % inner != 0) break;
      outer_parts = t;
      whole_inner = inner;
    }
  }
  Expr outer = vars[0];
  for (size_t t = 1; t < outer_parts; ++t) outer = Add(Mul(outer, sizes[t]), vars[t]);
  const Expr bound = whole_inner == 1 ? extent : IntLike(*AsConstInt(extent) / whole_inner, extent);
  return MakeBinary(BinaryOp::kLT, Simplify(outer), bound);
}

}  // namespace

std::vector<std::string> Schedule::Split(const std::string& loop_name,
                                         const std::vector<std::optional<int64_t>>& factors) {
  EnsureStageII("split");
  const ForNode* loop = FindLoop(func_, loop_name, "split");
  const std::string context = Excerpt(loop);
  const std::string where = "split: loop '" + loop_name + "'";
  if (factors.size() < 2) ThrowScheduleError(where + ": give at least two factors", context);
  const int64_t* min = AsConstInt(loop->min);
  if (!min || *min != 0) ThrowScheduleError(where + " does not start at 0; split needs a loop from 0", context);
  int unknown = -1;
  int64_t product = 1;
  for (size_t t = 0; t < factors.size(); ++t) {
    if (!factors[t]) {
      if (unknown >= 0) ThrowScheduleError(where + ": at most one factor may be None", context);
      unknown = static_cast<int>(t);
    } else if (*factors[t] <= 0) {
      ThrowScheduleError(where + ": factor " + std::to_string(*factors[t]) + " is not positive", context);
    } else if (__builtin_mul_overflow(product, *factors[t], &product) || product > MaxValue(loop->var->dtype)) {
      ThrowScheduleError(where + ": the factors multiply to more than its " + ToString(loop->var->dtype) +
                             " index holds (" + std::to_string(MaxValue(loop->var->dtype)) + ")",
                         context);
    }
  }
  const Expr& extent = loop->extent;
  const int64_t* constant = AsConstInt(extent);
  std::vector<Expr> sizes;
  for (size_t t = 0; t < factors.size(); ++t) {
    if (factors[t]) {
      sizes.push_back(IntLike(*factors[t], extent));
    } else if (constant) {
      sizes.push_back(IntLike((*constant + product - 1) / product, extent));
    } else {
      Expr rounded = Add(extent, IntLike(product - 1, extent));
      sizes.push_back(Simplify(MakeBinary(BinaryOp::kFloorDiv, rounded, IntLike(product, extent))));
    }
  }
  bool exact = false;
  if (constant) {
    int64_t total = 1;
    for (const Expr& s : sizes) total *= *AsConstInt(s);
    if (total < *constant) {
      ThrowScheduleError(where + ": the factors cover " + std::to_string(total) + " iterations, fewer than its extent " +
                             std::to_string(*constant),
                         context);
    }
    exact = total == *constant;
  }
  // New variables and the old one in terms of them.
  std::vector<Var> vars;
  std::vector<std::string> names;
  PrimFunc naming = func_;
  for (size_t t = 0; t < factors.size(); ++t) {
    std::string name = FreshName(naming, loop_name + "_" + std::to_string(t));
    for (const std::string& taken : names) {
      if (taken == name) name += "_";
    }
    names.push_back(name);
    vars.push_back(MakeVar(name, loop->var->dtype));
  }
  Expr combined = vars[0];
  for (size_t t = 1; t < vars.size(); ++t) combined = Add(Mul(combined, sizes[t]), vars[t]);
  combined = Simplify(combined);
  Stmt body = Substitute(loop->body, {{loop->var.get(), combined}});
  if (!exact) body = MakeIf(SplitGuard(vars, sizes, extent), body);
  for (size_t t = vars.size(); t-- > 0;) body = MakeFor(vars[t], IntLike(0, extent), sizes[t], ForKind::kSerial, body);
  func_ = ReplaceStmt(func_, loop, body);
  Record(PyTuple(names) + " = sch.split(" + PyStr(loop_name) + ", factors=" + PyFactors(factors) + ")");
  return names;
}

}  // namespace sparsetir
