// parallel / vectorize / unroll / bind: change how one loop runs.
//
//   sch.parallel("i")      for i in T.parallel(m):       (host threads)
//   sch.vectorize("k_1")   for k_1 in T.vectorized(16):  (SIMD)
//   sch.unroll("k_0")      for k_0 in T.unroll(8):
//   sch.bind("i", "blockIdx.x")  for i in T.thread_binding(m, thread="blockIdx.x"):  (GPU)
// parallel, and bind to any axis but threadIdx.x, refuse a loop whose
// iterations store to the same elements (a reduction loop): its stores must
// depend on the loop variable. A reduction loop bound to threadIdx.x runs as
// lanes that combine their parts (transforms/lower_lane_reductions.h).
#include <set>
#include <vector>

#include "ir/functor.h"
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {
namespace {

PrimFunc SetKind(const PrimFunc& f, const ForNode* loop, ForKind kind, const std::string& tag = "") {
  return ReplaceStmt(f, loop, MakeFor(loop->var, loop->min, loop->extent, kind, loop->body, tag));
}

// The first buffer stored to without depending on `var`, or null. Buffers
// allocated inside the body are private to each iteration and never race.
Buffer StoreIndependentOf(const Stmt& body, const VarNode* var) {
  struct Finder : IRVisitor {
    std::set<const VarNode*> dependent;  // `var` and the lets computed from it
    Buffer found;
    std::set<const BufferNode*> private_buffers;
    void Visit(const AllocateNode* n) override {
      private_buffers.insert(n->buffer.get());
      IRVisitor::Visit(n);
    }
    void Visit(const BufferStoreNode* n) override {
      bool depends = private_buffers.count(n->buffer.get()) > 0;
      for (const Expr& index : n->indices) depends |= UsesAny(index, dependent);
      if (!depends && !found) found = n->buffer;
      IRVisitor::Visit(n);
    }
  } finder;
  finder.dependent = VarsComputedFrom(body, var);
  finder.VisitStmt(body);
  return finder.found;
}

// A loop bound to `axis` around `loop` or inside it: a thread has one index on
// each axis, so two nested loops bound to one axis would each see it, and
// only their diagonal would run.
const ForNode* NestedBindingTo(const Stmt& body, const ForNode* loop, const std::string& axis) {
  struct Finder : IRVisitor {
    const ForNode* loop;
    std::string axis;
    std::vector<const ForNode*> bound;  // the enclosing loops bound to axis
    bool inside = false;
    const ForNode* found = nullptr;
    void Visit(const ForNode* n) override {
      const bool same_axis = n->for_kind == ForKind::kThreadBinding && n->thread_tag == axis && n != loop;
      if (n == loop && !bound.empty() && !found) found = bound.back();
      if (same_axis && inside && !found) found = n;
      if (same_axis) bound.push_back(n);
      const bool was_inside = inside;
      inside = inside || n == loop;
      IRVisitor::Visit(n);
      inside = was_inside;
      if (same_axis) bound.pop_back();
    }
  } finder;
  finder.loop = loop;
  finder.axis = axis;
  finder.VisitStmt(body);
  return finder.found;
}

}  // namespace

void Schedule::Parallel(const std::string& name) {
  EnsureStageII("parallel");
  const ForNode* loop = FindLoop(func_, name, "parallel");
  if (Buffer racing = StoreIndependentOf(loop->body, loop->var.get())) {
    ThrowScheduleError("parallel: loop '" + name + "' carries a reduction: its iterations store to the same elements of '" +
                           racing->name + "', so running them in parallel would race",
                       Excerpt(loop));
  }
  func_ = SetKind(func_, loop, ForKind::kParallel);
  Record("sch.parallel(" + PyStr(name) + ")");
}

void Schedule::Vectorize(const std::string& name) {
  EnsureStageII("vectorize");
  const ForNode* loop = FindLoop(func_, name, "vectorize");
  struct HasLoop : IRVisitor {
    bool found = false;
    void Visit(const ForNode*) override { found = true; }
  } inner;
  inner.VisitStmt(loop->body);
  if (inner.found) {
    ThrowScheduleError("vectorize: loop '" + name + "' is not innermost (it contains other loops); vectorize an innermost loop",
                       Excerpt(loop));
  }
  if (Buffer reduced = StoreIndependentOf(loop->body, loop->var.get())) {
    ThrowScheduleError("vectorize: loop '" + name + "' carries a reduction into '" + reduced->name +
                           "' (its stores do not depend on it); vectorizing a reduction loop is not supported",
                       Excerpt(loop));
  }
  func_ = SetKind(func_, loop, ForKind::kVectorized);
  Record("sch.vectorize(" + PyStr(name) + ")");
}

void Schedule::Unroll(const std::string& name) {
  EnsureStageII("unroll");
  const ForNode* loop = FindLoop(func_, name, "unroll");
  func_ = SetKind(func_, loop, ForKind::kUnrolled);
  Record("sch.unroll(" + PyStr(name) + ")");
}

void Schedule::Bind(const std::string& name, const std::string& thread_axis) {
  EnsureStageII("bind");
  static const std::set<std::string> kAxes = {"blockIdx.x", "blockIdx.y", "blockIdx.z",
                                             "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  const ForNode* loop = FindLoop(func_, name, "bind");
  if (!kAxes.count(thread_axis)) {
    ThrowScheduleError("bind: unknown thread axis '" + thread_axis +
                           "' (expected blockIdx.x/y/z or threadIdx.x/y/z)",
                       Excerpt(loop));
  }
  // Lanes of a warp combine their parts of a reduction with shuffles
  // (lower_lane_reductions); threads of other axes and blocks have no such
  // lowering and would race.
  if (thread_axis != "threadIdx.x") {
    if (Buffer reduced = StoreIndependentOf(loop->body, loop->var.get())) {
      ThrowScheduleError("bind: loop '" + name + "' carries a reduction into '" + reduced->name +
                             "' (its stores do not depend on it), so " + thread_axis +
                             " would race on it; bind a reduction loop to threadIdx.x (lanes of a warp, which "
                             "combine their parts) or keep it serial",
                         Excerpt(loop));
    }
  }
  if (const ForNode* other = NestedBindingTo(func_->body, loop, thread_axis)) {
    ThrowScheduleError("bind: loop '" + other->var->name + "', which nests with loop '" + name + "', is bound to " +
                           thread_axis + " already; a thread has one index on each axis, so bind nested loops to "
                           "different axes",
                       Excerpt(loop));
  }
  func_ = SetKind(func_, loop, ForKind::kThreadBinding, thread_axis);
  Record("sch.bind(" + PyStr(name) + ", " + PyStr(thread_axis) + ")");
}

}  // namespace sparsetir
