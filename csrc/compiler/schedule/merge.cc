// merge (stage II): sibling loops over the same range become one loop whose
// body runs theirs in order, so a row's passes (a softmax's scores, max,
// exponentials, sum and division, then the weighted sum) run back to back
// while the row is in cache, instead of each pass streaming every row.
//
// Before:  for i in T.serial(m): scores(i)
//          for i_1 in T.serial(m): row_max(i_1)
// After:   sch.merge(["i", "i_1"])
//          for i in T.serial(m):
//              scores(i)
//              row_max(i)
//
// Legal when the loops are consecutive statements of one sequence with equal
// ranges and no iteration reads what another iteration wrote: every buffer
// written by one body and touched by another is indexed by the loop variable
// in one of its dimensions (the row, or a feature), everywhere, or, after a
// split, by `o + v * s + r` with the same s everywhere, r a sum of inner loop
// variables that stays in [0, s) and o the same everywhere, a sum of
// variables bound outside the loops (an outer part of the same split, merged
// before): iteration v touches rows [o + v s, o + v s + s) only. Stage II
// only: there, a buffer's first index is its row position; after
// lower_sparse_buffer rows are flattened into offsets.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/linear_form.h"
#include "ir/printer.h"
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {
namespace {

// The sequence that holds `loop` as a direct child.
const SeqNode* ParentSequence(const Stmt& root, const ForNode* loop) {
  struct Finder : IRVisitor {
    const ForNode* loop;
    const SeqNode* found = nullptr;
    void Visit(const SeqNode* n) override {
      for (const Stmt& s : n->stmts) {
        if (s.get() == loop) found = n;
      }
      IRVisitor::Visit(n);
    }
  } finder;
  finder.loop = loop;
  finder.VisitStmt(root);
  return finder.found;
}

struct BufferAccesses : IRVisitor {
  std::map<const BufferNode*, std::vector<std::vector<Expr>>> touched;
  std::set<const BufferNode*> written;
  void Visit(const BufferLoadNode* n) override {
    touched[n->buffer.get()].push_back(n->indices);
    IRVisitor::Visit(n);
  }
  void Visit(const BufferStoreNode* n) override {
    touched[n->buffer.get()].push_back(n->indices);
    written.insert(n->buffer.get());
    IRVisitor::Visit(n);
  }
  void Visit(const AtomicAddNode* n) override {
    const auto* target = n->target->as<BufferLoadNode>();
    written.insert(target->buffer.get());
    IRVisitor::Visit(n);
  }
};

// The extents of the loops inside the bodies that start at 0, and every
// variable the bodies bind (loops, lets): what is not among them is fixed for
// one iteration of the merged loop.
struct InnerVars {
  std::map<const VarNode*, int64_t> extents;
  std::set<const VarNode*> bound;
};

InnerVars CollectInnerVars(const std::vector<Stmt>& bodies) {
  struct Collector : IRVisitor {
    InnerVars vars;
    void Visit(const ForNode* n) override {
      const int64_t* min = AsConstInt(n->min);
      const int64_t* extent = AsConstInt(n->extent);
      if (min && *min == 0 && extent && *extent > 0) vars.extents[n->var.get()] = *extent;
      vars.bound.insert(n->var.get());
      IRVisitor::Visit(n);
    }
    void Visit(const LetNode* n) override {
      vars.bound.insert(n->var.get());
      IRVisitor::Visit(n);
    }
  } collector;
  for (const Stmt& body : bodies) collector.VisitStmt(body);
  return collector.vars;
}

// What an index addresses per iteration of the merged loop's variable: a
// block of `rows` rows from `outer` (variables bound outside the loop, times
// constants), the same in every iteration but for the block's place.
struct RowBlock {
  int64_t rows;
  std::map<const VarNode*, int64_t> outer;
  bool operator==(const RowBlock& other) const { return rows == other.rows && outer == other.outer; }
};

// The row block of an index: 1 row for `var` itself, s rows for
// `o + var * s + r` with r a sum of inner loop variables times non-negative
// constants whose largest value is below s (a split's inner parts) and o a
// sum of variables the bodies do not bind; nullopt otherwise.
std::optional<RowBlock> RowsPerIteration(const Expr& index, const VarNode* var, const InnerVars& inner) {
  const std::optional<LinearForm> linear = AsLinear(index);
  if (!linear || linear->constant != 0) return std::nullopt;
  auto own = linear->coefficients.find(var);
  if (own == linear->coefficients.end() || own->second <= 0) return std::nullopt;
  RowBlock block{own->second, {}};
  int64_t largest_rest = 0;
  for (const auto& [v, coefficient] : linear->coefficients) {
    if (v == var || coefficient == 0) continue;
    if (!inner.bound.count(v)) {
      block.outer[v] = coefficient;
      continue;
    }
    auto extent = inner.extents.find(v);
    if (extent == inner.extents.end() || coefficient < 0) return std::nullopt;
    largest_rest += coefficient * (extent->second - 1);
  }
  if (largest_rest >= own->second) return std::nullopt;
  return block;
}

// True if some dimension of `buffer` is indexed by `var` (with the same
// row block, RowsPerIteration) in every access of every body.
bool IndexedByOnEveryAccess(const BufferNode* buffer, const std::vector<BufferAccesses>& accesses,
                            const VarNode* var, const InnerVars& inner) {
  size_t rank = SIZE_MAX;
  for (const BufferAccesses& a : accesses) {
    auto found = a.touched.find(buffer);
    if (found == a.touched.end()) continue;
    for (const std::vector<Expr>& indices : found->second) rank = std::min(rank, indices.size());
  }
  for (size_t d = 0; d < rank; ++d) {
    bool every = true;
    std::optional<RowBlock> rows;
    for (const BufferAccesses& a : accesses) {
      auto found = a.touched.find(buffer);
      if (found == a.touched.end()) continue;
      for (const std::vector<Expr>& indices : found->second) {
        const std::optional<RowBlock> here = RowsPerIteration(indices[d], var, inner);
        every &= here.has_value() && (!rows || *rows == *here);
        if (here) rows = here;
      }
    }
    if (every) return true;
  }
  return false;
}

// A buffer shared between bodies, written by one, with no dimension that
// every access indexes by the loop variable itself: the merged loop would
// read another iteration's result before it is written. Returns its name,
// or "". (A row loop's buffers are indexed by the row in their first
// dimension; a feature loop's, such as a mean's division merged into its
// sum, in their last.)
std::string CrossRowBuffer(const std::vector<Stmt>& bodies, const VarNode* row) {
  std::vector<BufferAccesses> accesses(bodies.size());
  for (size_t t = 0; t < bodies.size(); ++t) accesses[t].VisitStmt(bodies[t]);
  const InnerVars inner = CollectInnerVars(bodies);
  std::map<const BufferNode*, int> bodies_touching;
  std::set<const BufferNode*> written;
  for (const BufferAccesses& a : accesses) {
    for (const auto& [buffer, _] : a.touched) ++bodies_touching[buffer];
    written.insert(a.written.begin(), a.written.end());
  }
  for (const BufferAccesses& a : accesses) {
    for (const auto& [buffer, all] : a.touched) {
      if (!written.count(buffer) || bodies_touching[buffer] < 2) continue;
      if (!IndexedByOnEveryAccess(buffer, accesses, row, inner)) return buffer->name;
    }
  }
  return "";
}

}  // namespace

std::string Schedule::Merge(const std::vector<std::string>& names) {
  EnsureStageII("merge");
  if (names.size() < 2) ThrowScheduleError("merge: give at least two loops", "");
  std::vector<const ForNode*> loops;
  for (const std::string& name : names) loops.push_back(FindLoop(func_, name, "merge"));
  const std::string context = Excerpt(loops[0]);
  if (func_->stage != Stage::kII) {
    ThrowScheduleError("merge: works at stage II, before lower_sparse_buffer flattens rows into offsets", context);
  }
  const SeqNode* seq = ParentSequence(func_->body, loops[0]);
  size_t first = 0;
  while (seq && seq->stmts[first].get() != loops[0]) ++first;
  for (size_t t = 1; t < loops.size(); ++t) {
    if (!seq || first + t >= seq->stmts.size() || seq->stmts[first + t].get() != loops[t]) {
      ThrowScheduleError("merge: loop '" + names[t] + "' does not directly follow loop '" + names[t - 1] +
                             "' in the same sequence of statements",
                         context);
    }
    if (!StructuralEqual(loops[t]->min, loops[0]->min) || !StructuralEqual(loops[t]->extent, loops[0]->extent) ||
        loops[t]->for_kind != loops[0]->for_kind) {
      ThrowScheduleError("merge: loop '" + names[t] + "' does not run over the same range, in the same way, as loop '" +
                             names[0] + "'",
                         context);
    }
  }
  std::vector<Stmt> bodies;
  for (const ForNode* loop : loops) bodies.push_back(Substitute(loop->body, {{loop->var.get(), loops[0]->var}}));
  std::string shared = CrossRowBuffer(bodies, loops[0]->var.get());
  if (!shared.empty()) {
    ThrowScheduleError("merge: buffer '" + shared + "' is written by one loop and accessed by another at elements "
                           "other than the loop's own row (no dimension is indexed by the loop variable in every "
                           "access); merging would read them before they are written",
                       context);
  }
  Stmt merged = MakeFor(loops[0]->var, loops[0]->min, loops[0]->extent, loops[0]->for_kind, MakeSeq(bodies),
                        loops[0]->thread_tag);
  std::vector<Stmt> stmts(seq->stmts.begin(), seq->stmts.begin() + first);
  stmts.push_back(merged);
  stmts.insert(stmts.end(), seq->stmts.begin() + first + loops.size(), seq->stmts.end());
  func_ = ReplaceStmt(func_, seq, MakeSeq(stmts));
  Record("sch.merge(" + PyList(names) + ")");
  return names[0];
}

}  // namespace sparsetir
