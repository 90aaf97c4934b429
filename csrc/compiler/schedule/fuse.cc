// fuse: directly nested loops become one loop over their product.
//
// Before:  for i in T.serial(4):
//              for k in T.serial(8): body(i, k)
// After:   i_k_fused = sch.fuse(["i", "k"])
//          for i_k_fused in T.serial(32): body(i_k_fused // 8, i_k_fused % 8)
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"
#include "transforms/simplify.h"

namespace sparsetir {

std::string Schedule::Fuse(const std::vector<std::string>& names) {
  EnsureStageII("fuse");
  if (names.size() < 2) ThrowScheduleError("fuse: give at least two loops", "");
  std::vector<const ForNode*> loops;
  for (const std::string& name : names) loops.push_back(FindLoop(func_, name, "fuse"));
  const std::string context = Excerpt(loops[0]);
  for (size_t t = 0; t < loops.size(); ++t) {
    const int64_t* min = AsConstInt(loops[t]->min);
    if (!min || *min != 0) ThrowScheduleError("fuse: loop '" + names[t] + "' does not start at 0", context);
    if (t + 1 < loops.size() && loops[t]->body.get() != loops[t + 1]) {
      ThrowScheduleError("fuse: loop '" + names[t + 1] + "' is not directly inside loop '" + names[t] +
                             "'; only a perfect nest can be fused",
                         context);
    }
    for (size_t outer = 0; outer < t; ++outer) {
      if (Uses(loops[t]->extent, loops[outer]->var.get())) {
        ThrowScheduleError("fuse: the extent of loop '" + names[t] + "' depends on loop '" + names[outer] +
                               "' (a sparse level under its parent); fuse cannot merge them",
                           context);
      }
    }
  }
  // Constant extents are checked here; others when the kernel is called (runtime/contract.h).
  int64_t product = 1;
  for (const ForNode* loop : loops) {
    const int64_t* e = AsConstInt(loop->extent);
    if (e && (__builtin_mul_overflow(product, *e, &product) || product > MaxValue(loops[0]->var->dtype))) {
      ThrowScheduleError("fuse: the loops run more times together than the fused loop's " +
                             ToString(loops[0]->var->dtype) + " index holds (" +
                             std::to_string(MaxValue(loops[0]->var->dtype)) + ")",
                         context);
    }
  }
  std::string joined;
  for (const std::string& n : names) joined += n + "_";
  std::string fused_name = FreshName(func_, joined + "fused");
  Var fused = MakeVar(fused_name, loops[0]->var->dtype);
  Expr extent = loops[0]->extent;
  for (size_t t = 1; t < loops.size(); ++t) extent = Mul(extent, loops[t]->extent);
  VarMap map;
  Expr stride = IntLike(1, extent);
  for (size_t t = loops.size(); t-- > 0;) {
    Expr value = MakeBinary(BinaryOp::kFloorDiv, fused, stride);
    if (t > 0) value = MakeBinary(BinaryOp::kFloorMod, value, loops[t]->extent);
    map[loops[t]->var.get()] = Simplify(MakeCast(loops[t]->var->dtype, value));
    stride = Mul(stride, loops[t]->extent);
  }
  Stmt body = Substitute(loops.back()->body, map);
  func_ = ReplaceStmt(func_, loops[0], MakeFor(fused, IntLike(0, extent), Simplify(extent), ForKind::kSerial, body));
  Record(fused_name + " = sch.fuse(" + PyList(names) + ")");
  return fused_name;
}

}  // namespace sparsetir
