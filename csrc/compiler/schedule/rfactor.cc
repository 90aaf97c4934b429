// rfactor: a reduction loop accumulates into one partial result per
// iteration (a local buffer as long as the loop), and the partials are
// combined once after the reduction. The loop then no longer carries the
// reduction, so it can be vectorized: a dot product becomes 16 lanes of
// independent FMAs and one horizontal sum. Like any reassociation it changes
// the order in which terms are added (the rounding, not the exact result).
//
// Before:  for k_0 in T.serial(8):
//              for k_1 in T.serial(16):
//                  O_local[0] = O_local[0] + X[i, k_0 * 16 + k_1] * Y[j, k_0 * 16 + k_1]
// After:   O_local_rf = sch.rfactor("k_1")
//          O_local_rf = T.alloc_buffer((16,), "float32", scope="local")
//          for k_1_init in T.serial(16): O_local_rf[k_1_init] = 0.0
//          for k_0 in T.serial(8):
//              for k_1 in T.serial(16):
//                  O_local_rf[k_1] = O_local_rf[k_1] + X[i, k_0 * 16 + k_1] * Y[j, k_0 * 16 + k_1]
//          for k_1_merge in T.serial(16): O_local[0] = O_local[0] + O_local_rf[k_1_merge]
//
// The combined loops are the perfect nest of reduction loops around the
// factored one (k_0 above): every loop whose only content is the next one and
// whose variable the reduced element does not depend on.
//
// Inside the factored loop there may be more loops and guards (a split's
// `if`) around the store. Inner loops whose variables index the reduced
// element become dimensions of the partials buffer, so a whole output row can
// be factored: splitting a CSR row's non-zeros in two and factoring gives two
// independent accumulator sets for an SpMM row (C_local_rf[2, 32]); the merge
// loops copy the inner loops' kinds, so a vectorized row stays vectorized.
#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/substitute.h"
#include "schedule/loop_utils.h"
#include "schedule/schedule.h"
#include "schedule/trace_format.h"

namespace sparsetir {
namespace {

Stmt StripBlocks(Stmt s) {
  while (const auto* block = s->as<BlockNode>()) s = block->body;
  return s;
}

// `B[idx] = B[idx] op e` with op in {+, max, min}: the parts, or false.
struct Reduction {
  const BufferStoreNode* store = nullptr;
  BinaryOp op = BinaryOp::kAdd;
  Expr operand;  // e
};

bool MatchReduction(const BufferStoreNode* store, Reduction* out) {
  if (!store) return false;
  const auto* combine = store->value->as<BinaryNode>();
  if (!combine || (combine->op != BinaryOp::kAdd && combine->op != BinaryOp::kMax && combine->op != BinaryOp::kMin)) {
    return false;
  }
  auto is_self = [&](const Expr& e) {
    const auto* load = e->as<BufferLoadNode>();
    if (!load || load->buffer.get() != store->buffer.get() || load->indices.size() != store->indices.size()) {
      return false;
    }
    for (size_t d = 0; d < load->indices.size(); ++d) {
      if (!StructuralEqual(load->indices[d], store->indices[d])) return false;
    }
    return true;
  };
  out->store = store;
  out->op = combine->op;
  if (is_self(combine->a)) {
    out->operand = combine->b;
  } else if (is_self(combine->b)) {
    out->operand = combine->a;
  } else {
    return false;
  }
  return true;
}

Expr Identity(BinaryOp op, DataType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  if (IsFloat(dtype)) return MakeFloat(op == BinaryOp::kAdd ? 0.0 : op == BinaryOp::kMax ? -inf : inf, dtype);
  const int64_t lowest = dtype == DataType::kInt64 ? std::numeric_limits<int64_t>::min() : INT32_MIN;
  const int64_t highest = dtype == DataType::kInt64 ? std::numeric_limits<int64_t>::max() : INT32_MAX;
  return MakeInt(op == BinaryOp::kAdd ? 0 : op == BinaryOp::kMax ? lowest : highest, dtype);
}

// The loops (and guards) between the factored loop and its store.
struct InnerNest {
  std::vector<const ForNode*> loops;
  const BufferStoreNode* store = nullptr;
};

bool FindInnerNest(Stmt s, InnerNest* out) {
  while (true) {
    s = StripBlocks(s);
    if (const auto* loop = s->as<ForNode>()) {
      out->loops.push_back(loop);
      s = loop->body;
    } else if (const auto* guard = s->as<IfThenElseNode>()) {
      if (guard->else_case) return false;
      s = guard->then_case;
    } else {
      out->store = s->as<BufferStoreNode>();
      return out->store != nullptr;
    }
  }
}

bool UsesAny(const std::vector<Expr>& indices, const VarNode* var) {
  for (const Expr& e : indices) {
    if (Uses(e, var)) return true;
  }
  return false;
}

// The statements from the root down to `target`, outermost first.
std::vector<const StmtNode*> PathTo(const PrimFunc& f, const StmtNode* target) {
  struct PathFinder : IRVisitor {
    const StmtNode* target;
    std::vector<const StmtNode*> stack, found;
    void VisitStmt(const Stmt& s) override {
      if (!s || !found.empty()) return;
      stack.push_back(s.get());
      if (s.get() == target) found = stack;
      IRVisitor::VisitStmt(s);
      stack.pop_back();
    }
  } finder;
  finder.target = target;
  finder.VisitStmt(f->body);
  return finder.found;
}

// Replaces the reduction's store by `partial` and the nest's top loop by
// `wrap(new top, statements after it)`. The partials buffer's scope runs to
// the end of the enclosing sequence, as in printed (and parsed) IR, where an
// alloc_buffer line covers the statements after it.
class Factorer : public IRMutator {
 public:
  const StmtNode* store;
  const StmtNode* top;
  Stmt partial;
  std::function<Stmt(Stmt, std::vector<Stmt>)> wrap;

  Stmt VisitStmt(const Stmt& s) override {
    if (s.get() == store) return partial;
    if (s.get() == top) return wrap(IRMutator::VisitStmt(s), {});
    return IRMutator::VisitStmt(s);
  }

 protected:
  Stmt Mutate(const SeqNode* n, const Stmt& self) override {
    for (size_t k = 0; k < n->stmts.size(); ++k) {
      if (n->stmts[k].get() != top) continue;
      std::vector<Stmt> out(n->stmts.begin(), n->stmts.begin() + k);
      std::vector<Stmt> rest;
      for (size_t r = k + 1; r < n->stmts.size(); ++r) rest.push_back(VisitStmt(n->stmts[r]));
      out.push_back(wrap(IRMutator::VisitStmt(n->stmts[k]), rest));
      return out.size() == 1 ? out[0] : MakeSeq(out);
    }
    return IRMutator::Mutate(n, self);
  }
};

}  // namespace

std::string Schedule::RFactor(const std::string& loop_name) {
  EnsureStageIII("rfactor");
  const ForNode* loop = FindLoop(func_, loop_name, "rfactor");
  const std::string context = Excerpt(loop);
  const std::string where = "rfactor: loop '" + loop_name + "'";
  const int64_t* extent = AsConstInt(loop->extent);
  const int64_t* min = AsConstInt(loop->min);
  if (!extent || !min || *min != 0) {
    ThrowScheduleError(where + " needs a constant extent and to start at 0; specialize or split it first", context);
  }
  Reduction r;
  InnerNest inner;
  if (!FindInnerNest(loop->body, &inner) || !MatchReduction(inner.store, &r)) {
    ThrowScheduleError(where + " must hold exactly one reduction `B[...] = B[...] + ...` (or T.max / T.min)", context);
  }
  if (UsesAny(r.store->indices, loop->var.get())) {
    ThrowScheduleError(where + " does not carry a reduction: its store to '" + r.store->buffer->name +
                           "' depends on it (vectorize or parallelize it directly)",
                       context);
  }
  // Inner loops that index the reduced element: dimensions of the partials.
  std::vector<const ForNode*> spatial;
  for (const ForNode* l : inner.loops) {
    if (!UsesAny(r.store->indices, l->var.get())) continue;
    const int64_t* e = AsConstInt(l->extent);
    const int64_t* m = AsConstInt(l->min);
    if (!e || !m || *m != 0) {
      ThrowScheduleError(where + ": inner loop '" + l->var->name +
                             "' indexes the reduced element but has no constant extent from 0",
                         context);
    }
    spatial.push_back(l);
  }
  // The outermost loop of the perfect reduction nest around `loop`.
  std::vector<const StmtNode*> path = PathTo(func_, loop);
  const ForNode* top = loop;
  for (size_t k = path.size() - 1; k-- > 0;) {
    const auto* parent = path[k]->as<ForNode>();
    if (path[k]->as<BlockNode>()) continue;
    if (!parent || StripBlocks(parent->body).get() != static_cast<const StmtNode*>(top) ||
        UsesAny(r.store->indices, parent->var.get())) {
      break;
    }
    top = parent;
  }
  // The partials buffer and the three parts.
  const Buffer& target = r.store->buffer;
  BufferNode node;
  node.name = FreshName(func_, target->name + "_rf");
  node.kind = BufferKind::kAlloc;
  node.dtype = target->dtype;
  node.scope = "local";
  node.shape.push_back(IntLike(*extent, loop->extent));
  for (const ForNode* l : spatial) node.shape.push_back(l->extent);
  Buffer rf = MakeBuffer(std::move(node));
  auto combine = [&](Expr a, Expr b) { return MakeBinary(r.op, std::move(a), std::move(b)); };
  std::vector<Expr> rf_index = {loop->var};
  for (const ForNode* l : spatial) rf_index.push_back(l->var);
  Stmt partial = MakeStore(rf, rf_index, combine(MakeLoad(rf, rf_index), r.operand));
  // Init and merge: the factored loop outermost, then copies (fresh
  // variables, same kinds) of the spatial inner loops.
  // `first`: the extent of the loop over the partials (null: no loop, the
  // first index is 0).
  using Leaf = std::function<Stmt(const std::vector<Expr>&, const std::map<const VarNode*, Expr>&)>;
  std::set<std::string> taken;  // names given out here, not yet in func_
  auto fresh = [&](const std::string& base) {
    std::string name = FreshName(func_, base);
    for (int k = 1; taken.count(name); ++k) name = FreshName(func_, base + "_" + std::to_string(k));
    taken.insert(name);
    return name;
  };
  auto nest_over = [&](const std::string& suffix, Expr first, const Leaf& leaf, ForKind first_kind = ForKind::kSerial) {
    std::vector<Var> vars = {MakeVar(fresh(loop_name + suffix), loop->var->dtype)};
    std::map<const VarNode*, Expr> renamed;
    for (const ForNode* l : spatial) {
      vars.push_back(MakeVar(fresh(l->var->name + suffix), l->var->dtype));
      renamed[l->var.get()] = vars.back();
    }
    std::vector<Expr> index(vars.begin(), vars.end());
    if (!first) index[0] = IntLike(0, loop->extent);
    Stmt body = leaf(index, renamed);
    for (size_t d = spatial.size(); d > 0; --d) {
      const ForNode* l = spatial[d - 1];
      body = MakeFor(vars[d], l->min, l->extent, l->for_kind, body);
    }
    return first ? MakeFor(vars[0], IntLike(0, loop->extent), first, first_kind, body) : body;
  };
  auto nest = [&](const std::string& suffix, const Leaf& leaf) { return nest_over(suffix, loop->extent, leaf); };
  Stmt init = nest("_init", [&](const std::vector<Expr>& index, const std::map<const VarNode*, Expr>&) {
    return MakeStore(rf, index, Identity(r.op, target->dtype));
  });
  // The merge. With a power-of-two number of partials it is a tree: halve
  // the partials until one is left (rf[t] = rf[t] + rf[t + half], each level
  // a loop of independent operations the C++ compiler vectorizes), then add
  // that one to the target; otherwise one chain over the partials.
  auto merge_leaf = [&](const std::vector<Expr>& index, const std::map<const VarNode*, Expr>& renamed) {
    std::vector<Expr> target_index;
    for (const Expr& e : r.store->indices) target_index.push_back(Substitute(e, renamed));
    return MakeStore(target, target_index, combine(MakeLoad(target, target_index), MakeLoad(rf, index)));
  };
  std::vector<Stmt> merge;
  if (*extent >= 4 && (*extent & (*extent - 1)) == 0) {
    std::vector<Stmt> levels;
    for (int64_t half = *extent / 2; half >= 1; half /= 2) {
      levels.push_back(nest_over("_tree", IntLike(half, loop->extent),
                                 [&](const std::vector<Expr>& index, const std::map<const VarNode*, Expr>&) {
                                   std::vector<Expr> upper = index;
                                   upper[0] = Add(index[0], IntLike(half, index[0]));
                                   return MakeStore(rf, index, combine(MakeLoad(rf, index), MakeLoad(rf, upper)));
                                 },
                                 // a level over the innermost dimension is one SIMD operation
                                 half >= 2 && spatial.empty() ? ForKind::kVectorized : ForKind::kSerial));
    }
    levels.push_back(nest_over("_merge", nullptr, merge_leaf));
    merge = levels;
  } else {
    merge = {nest("_merge", merge_leaf)};
  }
  Factorer factorer;
  factorer.store = r.store;
  factorer.top = top;
  factorer.partial = partial;
  factorer.wrap = [&](Stmt nest, std::vector<Stmt> rest) {
    std::vector<Stmt> body = {init, nest};
    body.insert(body.end(), merge.begin(), merge.end());
    body.insert(body.end(), rest.begin(), rest.end());
    return MakeAllocate(rf, MakeSeq(body));
  };
  func_ = WithBody(func_, factorer.VisitStmt(func_->body));
  Record(rf->name + " = sch.rfactor(" + PyStr(loop_name) + ")");
  return rf->name;
}

}  // namespace sparsetir
