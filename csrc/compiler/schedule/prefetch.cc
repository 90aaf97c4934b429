// prefetch: at the top of a loop's body, ask the memory system for the part of
// a buffer that a later iteration of the loop will read.
//
// Before:  for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
//              v2: T.int32 = J_indptr[i] + j
//              v3: T.int32 = J_indices[v2]
//              for k in T.vectorized(32):
//                  C[i, k] = C[i, k] + A[v2] * B[v3, k]
// After:   sch.prefetch("j", "B", 32)
//          for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
//              if J_indptr[i] + (j + 32) < nnz:
//                  T.prefetch(B[J_indices[J_indptr[i] + (j + 32)], 0], 32)
//              v2: T.int32 = J_indptr[i] + j
//              ...
//
// A gather such as B[J_indices[...], k] has addresses no hardware prefetcher
// can guess; on a B larger than the caches its loads are the bottleneck, and
// asking for them some iterations ahead hides that latency. The region is the
// span that one iteration reads (inner loops contribute the last index's
// range); the loop variable is advanced by `offset`, and every index array
// read to form the address is guarded to stay in bounds (a prefetch of any
// address is harmless, reading an index array past its end is not).
//
// One inner loop of constant extent may pick the gathered row itself (a
// group of non-zeros per iteration, B[J_indices[first + q], k] for q in 4):
// then the hint is one span per row, in a loop of that extent.
#include <functional>
#include <vector>

#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

// One read of the buffer inside the loop, with what encloses it between the
// loop and the read: let bindings and inner loops, outermost first.
struct Read {
  const BufferLoadNode* load;
  std::vector<const LetNode*> lets;
  std::vector<const ForNode*> loops;
};

std::vector<Read> ReadsOf(const Stmt& body, const std::string& buffer) {
  struct Collector : IRVisitor {
    std::string buffer;
    std::vector<const LetNode*> lets;
    std::vector<const ForNode*> loops;
    std::vector<Read> reads;
    void Visit(const BufferLoadNode* n) override {
      if (n->buffer->name == buffer) reads.push_back({n, lets, loops});
      IRVisitor::Visit(n);
    }
    void Visit(const LetNode* n) override {
      VisitExpr(n->value);
      lets.push_back(n);
      VisitStmt(n->body);
      lets.pop_back();
    }
    void Visit(const ForNode* n) override {
      VisitExpr(n->min);
      VisitExpr(n->extent);
      loops.push_back(n);
      VisitStmt(n->body);
      loops.pop_back();
    }
    void Visit(const PrefetchNode*) override {}  // an earlier prefetch is not a read
  } collector;
  collector.buffer = buffer;
  collector.VisitStmt(body);
  return collector.reads;
}

// The read's indices in terms of variables bound outside the loop: let
// variables are replaced by their values (innermost first, since an inner
// value may mention an outer variable) and inner loop variables by `at(loop)`.
std::vector<Expr> IndicesAt(const Read& read, const std::function<Expr(const ForNode*)>& at) {
  std::vector<Expr> indices = read.load->indices;
  for (auto let = read.lets.rbegin(); let != read.lets.rend(); ++let) {
    for (Expr& index : indices) index = Substitute(index, {{(*let)->var.get(), (*let)->value}});
  }
  VarMap inner;
  for (const ForNode* loop : read.loops) inner[loop->var.get()] = at(loop);
  for (Expr& index : indices) index = Simplify(Substitute(index, inner));
  return indices;
}

// The inner loop of `read` whose variable a buffer load inside its indices
// reads (the row of a gather it moves), if one of constant extent does.
const ForNode* GatherLoop(const Read& read) {
  std::vector<Expr> indices = IndicesAt(read, [](const ForNode* l) { return Expr(l->var); });
  for (const ForNode* loop : read.loops) {
    if (!AsConstInt(loop->extent)) continue;
    struct InLoad : IRVisitor {
      const VarNode* var;
      bool found = false;
      void Visit(const BufferLoadNode* n) override {
        for (const Expr& index : n->indices) found |= Uses(index, var);
        IRVisitor::Visit(n);
      }
    } in_load;
    in_load.var = loop->var.get();
    for (const Expr& index : indices) in_load.VisitExpr(index);
    if (in_load.found) return loop;
  }
  return nullptr;
}

// Bounds checks for every index-array read in `indices` that depends on `var`.
Expr InBounds(const std::vector<Expr>& indices, const VarNode* var, bool check_lower) {
  struct Guard : IRVisitor {
    const VarNode* var;
    bool check_lower;
    Expr cond;
    void Add(Expr c) { cond = cond ? MakeBinary(BinaryOp::kAnd, cond, c) : c; }
    void Visit(const BufferLoadNode* n) override {
      IRVisitor::Visit(n);
      for (size_t d = 0; d < n->indices.size(); ++d) {
        if (!Uses(n->indices[d], var)) continue;
        Expr index = n->indices[d], extent = n->buffer->shape[d];
        UnifyIntegers(&index, &extent);
        Add(MakeBinary(BinaryOp::kLT, index, extent));
        if (check_lower) Add(MakeBinary(BinaryOp::kGE, index, IntLike(0, index)));
      }
    }
  } guard;
  guard.var = var;
  guard.check_lower = check_lower;
  for (const Expr& index : indices) guard.VisitExpr(index);
  return guard.cond ? Simplify(guard.cond) : nullptr;
}

// end - start + 1 as a constant, if it is one. The difference of two affine
// indices does not depend on the variables of the enclosing loops (a feature
// tile's offset cancels out), but the simplifier does not always cancel them,
// so loop variables are set to 0 first; scalar parameters stay (an extent
// that is not specialized leaves the span symbolic). The span is a hint: an
// index that is not affine would at worst prefetch the wrong lines.
Expr SpanSize(const PrimFunc& f, const Expr& start, const Expr& end) {
  struct LoopVars : IRVisitor {
    VarMap zero;
    void Visit(const ForNode* n) override {
      zero[n->var.get()] = MakeInt(0, n->var->dtype);
      IRVisitor::Visit(n);
    }
  } loops;
  loops.VisitStmt(f->body);
  return Simplify(Substitute(Add(Sub(end, start), IntLike(1, end)), loops.zero));
}

PrimFunc PrefetchRewrite(const PrimFunc& f, const std::string& loop_name, const std::string& buffer_name,
                         int64_t offset, int cache_level) {
  const ForNode* loop = FindLoop(f, loop_name, "prefetch");
  if (offset == 0) ThrowScheduleError("prefetch: the offset must be non-zero (iterations ahead)", Excerpt(loop));
  if (cache_level != 1 && cache_level != 2) {
    ThrowScheduleError("prefetch: cache_level must be 1 (L1) or 2 (L2, not L1), got " + std::to_string(cache_level),
                       Excerpt(loop));
  }
  if (loop->for_kind == ForKind::kVectorized) {
    ThrowScheduleError("prefetch: loop '" + loop_name + "' is vectorized; prefetch in an enclosing loop", Excerpt(loop));
  }
  std::vector<Read> reads = ReadsOf(loop->body, buffer_name);
  if (reads.empty()) {
    ThrowScheduleError("prefetch: buffer '" + buffer_name + "' is not read inside loop '" + loop_name + "'",
                       Excerpt(loop));
  }
  // A loop that picks gathered rows stays a variable: the span is one row's.
  const ForNode* gather = GatherLoop(reads[0]);
  auto first = [&](const ForNode* l) { return l == gather ? Expr(l->var) : l->min; };
  auto last = [&](const ForNode* l) {
    return l == gather ? Expr(l->var) : Simplify(Sub(Add(l->min, l->extent), IntLike(1, l->extent)));
  };
  std::vector<Expr> start = IndicesAt(reads[0], first), end = IndicesAt(reads[0], last);
  for (const Read& other : reads) {
    std::vector<Expr> s = IndicesAt(other, first);
    for (size_t d = 0; d < s.size(); ++d) {
      if (!StructuralEqual(s[d], start[d])) {
        ThrowScheduleError("prefetch: buffer '" + buffer_name + "' is read at different places in loop '" +
                               loop_name + "'; prefetch needs one region",
                           Excerpt(loop));
      }
    }
  }
  // One contiguous span: inner loops may move one index, and those after it
  // only over their whole extent (a multi-head operand's row: every head's
  // features, or one feature per head).
  const std::vector<Expr>& shape = reads[0].load->buffer->shape;
  auto whole = [&](size_t d) {
    const int64_t* extent = d < shape.size() ? AsConstInt(shape[d]) : nullptr;
    const int64_t *lo = AsConstInt(Simplify(start[d])), *hi = AsConstInt(Simplify(end[d]));
    return extent && lo && hi && *lo == 0 && *hi == *extent - 1;
  };
  size_t moving = start.size() - 1;
  int64_t inner = 1;  // the elements of one step of the moving index
  while (moving > 0 && whole(moving)) inner *= *AsConstInt(shape[moving--]);
  for (size_t d = 0; d < moving; ++d) {
    if (!StructuralEqual(start[d], end[d])) {
      ThrowScheduleError("prefetch: the region of '" + buffer_name + "' one iteration of '" + loop_name +
                             "' reads is not contiguous (an inner loop moves index " + std::to_string(d) + ")",
                         Excerpt(loop));
    }
  }
  // (An index no inner loop moves spans one step, whatever it reads.)
  Expr span_expr = StructuralEqual(start[moving], end[moving]) ? IntLike(1, start[moving])
                                                                : SpanSize(f, start[moving], end[moving]);
  span_expr = Simplify(Mul(span_expr, IntLike(inner, span_expr)));
  const int64_t* span = AsConstInt(span_expr);
  if (span && *span == 0) return f;  // an inner loop of extent 0: the buffer is never read
  if (!span || *span < 0) {
    ThrowScheduleError("prefetch: the span of '" + buffer_name + "' one iteration of '" + loop_name +
                           "' reads has no constant size; specialize the inner extents",
                       Excerpt(loop));
  }
  const VarNode* var = loop->var.get();
  const Expr ahead = offset > 0 ? Add(loop->var, IntLike(offset, loop->var)) : Sub(loop->var, IntLike(-offset, loop->var));
  for (Expr& index : start) index = Simplify(Substitute(index, {{var, ahead}}));
  Var row;
  if (gather) {  // a fresh variable: the gather loop's own stays in the body
    row = MakeVar(FreshName(f, gather->var->name + "_ahead"), gather->var->dtype);
    for (Expr& index : start) index = Simplify(Substitute(index, {{gather->var.get(), Expr(row)}}));
  }
  Stmt hint = MakePrefetch(MakeLoad(reads[0].load->buffer, start), *span, cache_level);
  if (Expr cond = InBounds(start, var, offset < 0)) hint = MakeIf(cond, hint);
  if (gather) hint = MakeFor(row, gather->min, gather->extent, ForKind::kUnrolled, hint, "");
  Stmt body = MakeSeq({hint, loop->body});
  return ReplaceStmt(f, loop, MakeFor(loop->var, loop->min, loop->extent, loop->for_kind, body, loop->thread_tag));
}

}  // namespace

void Schedule::Prefetch(const std::string& loop, const std::string& buffer, int64_t offset, int cache_level) {
  EnsureStageIII("prefetch");
  func_ = PrefetchRewrite(func_, loop, buffer, offset, cache_level);
  const std::string level = cache_level == 1 ? "" : ", cache_level=" + std::to_string(cache_level);
  Record("sch.prefetch(" + PyStr(loop) + ", " + PyStr(buffer) + ", " + std::to_string(offset) + level + ")");
}

}  // namespace sparsetir
