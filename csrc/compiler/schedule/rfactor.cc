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
#include <climits>
#include <cmath>
#include <functional>
#include <limits>

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

bool MatchReduction(const Stmt& s, Reduction* out) {
  const auto* store = s->as<BufferStoreNode>();
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
  Stmt body = StripBlocks(loop->body);
  if (!MatchReduction(body, &r)) {
    ThrowScheduleError(where + " must hold exactly one reduction `B[...] = B[...] + ...` (or T.max / T.min)", context);
  }
  if (UsesAny(r.store->indices, loop->var.get())) {
    ThrowScheduleError(where + " does not carry a reduction: its store to '" + r.store->buffer->name +
                           "' depends on it (vectorize or parallelize it directly)",
                       context);
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
  Buffer rf = MakeBuffer(std::move(node));
  auto combine = [&](Expr a, Expr b) { return MakeBinary(r.op, std::move(a), std::move(b)); };
  Var init_var = MakeVar(FreshName(func_, loop_name + "_init"), loop->var->dtype);
  Var merge_var = MakeVar(FreshName(func_, loop_name + "_merge"), loop->var->dtype);
  Stmt init = MakeFor(init_var, IntLike(0, loop->extent), loop->extent, ForKind::kSerial,
                      MakeStore(rf, {init_var}, Identity(r.op, target->dtype)));
  Stmt partial = MakeStore(rf, {loop->var}, combine(MakeLoad(rf, {loop->var}), r.operand));
  Stmt merge = MakeFor(merge_var, IntLike(0, loop->extent), loop->extent, ForKind::kSerial,
                       MakeStore(target, r.store->indices,
                                 combine(MakeLoad(target, r.store->indices), MakeLoad(rf, {merge_var}))));
  Factorer factorer;
  factorer.store = r.store;
  factorer.top = top;
  factorer.partial = partial;
  factorer.wrap = [&](Stmt nest, std::vector<Stmt> rest) {
    std::vector<Stmt> body = {init, nest, merge};
    body.insert(body.end(), rest.begin(), rest.end());
    return MakeAllocate(rf, MakeSeq(body));
  };
  func_ = WithBody(func_, factorer.VisitStmt(func_->body));
  Record(rf->name + " = sch.rfactor(" + PyStr(loop_name) + ")");
  return rf->name;
}

}  // namespace sparsetir
