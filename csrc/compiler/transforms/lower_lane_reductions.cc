#include "transforms/lower_lane_reductions.h"

#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/substitute.h"
#include "support/error.h"

namespace sparsetir {
namespace {

constexpr int64_t kWarpSize = 32;
constexpr const char* kLaneAxis = "threadIdx.x";

[[noreturn]] void Refuse(const std::string& message) { throw UserError(UserErrorKind::kSchedule, message); }

// True if `e` reads a buffer.
bool ReadsBuffer(const Expr& e) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit(const BufferLoadNode*) override { found = true; }
  } finder;
  finder.VisitExpr(e);
  return finder.found;
}

// A loop bound to threadIdx.x. One whose extent reads a buffer is left to
// the code generator, which refuses it for that (a launch extent must be
// known to the host) before any question of reductions.
bool IsLaneLoop(const ForNode* loop) {
  return loop->for_kind == ForKind::kThreadBinding && loop->thread_tag == kLaneAxis && !ReadsBuffer(loop->extent);
}

std::vector<const ForNode*> LaneLoops(const Stmt& s) {
  struct Finder : IRVisitor {
    std::vector<const ForNode*> found;
    void Visit(const ForNode* n) override {
      if (IsLaneLoop(n)) found.push_back(n);
      IRVisitor::Visit(n);
    }
  } finder;
  finder.VisitStmt(s);
  return finder.found;
}

// The stores into `buffer` under `s`.
std::vector<const BufferStoreNode*> StoresInto(const Stmt& s, const BufferNode* buffer) {
  struct Finder : IRVisitor {
    const BufferNode* buffer;
    std::vector<const BufferStoreNode*> found;
    void Visit(const BufferStoreNode* n) override {
      if (n->buffer.get() == buffer) found.push_back(n);
      IRVisitor::Visit(n);
    }
  } finder;
  finder.buffer = buffer;
  finder.VisitStmt(s);
  return finder.found;
}

// The loop's variable and every variable computed from it under the loop:
// lets of values that use one, loops whose bounds use one.
using VarSet = std::set<const VarNode*>;

bool UsesAny(const Expr& e, const VarSet& vars) {
  for (const VarNode* v : vars) {
    if (Uses(e, v)) return true;
  }
  return false;
}

VarSet DependentVars(const ForNode* loop) {
  struct Finder : IRVisitor {
    VarSet vars;
    void Visit(const LetNode* n) override {
      if (UsesAny(n->value, vars)) vars.insert(n->var.get());
      IRVisitor::Visit(n);
    }
    void Visit(const ForNode* n) override {
      if (UsesAny(n->min, vars) || UsesAny(n->extent, vars)) vars.insert(n->var.get());
      IRVisitor::Visit(n);
    }
  } finder;
  finder.vars.insert(loop->var.get());
  finder.VisitStmt(loop->body);
  return finder.vars;
}

// True if the store's element does not depend on the lane: every lane of
// the loop stores to it.
bool SharedByLanes(const BufferStoreNode* store, const VarSet& lane_vars) {
  for (const Expr& index : store->indices) {
    if (UsesAny(index, lane_vars)) return false;
  }
  return true;
}

// True if a store into `buffer` under `loop` stores to an element every lane
// stores to: the loop reduces into it.
bool ReducesInto(const ForNode* loop, const BufferNode* buffer) {
  const VarSet lane_vars = DependentVars(loop);
  for (const BufferStoreNode* store : StoresInto(loop->body, buffer)) {
    if (SharedByLanes(store, lane_vars)) return true;
  }
  return false;
}

// The lane intrinsic of an update B[idx] = B[idx] op v (op: +, max, min).
std::optional<Intrinsic> Combiner(const BufferStoreNode* store) {
  const auto* op = store->value->as<BinaryNode>();
  if (!op) return std::nullopt;
  const Expr self = MakeLoad(store->buffer, store->indices);
  if (!StructuralEqual(op->a, self) && !StructuralEqual(op->b, self)) return std::nullopt;
  switch (op->op) {
    case BinaryOp::kAdd: return Intrinsic::kLaneSum;
    case BinaryOp::kMax: return Intrinsic::kLaneMax;
    case BinaryOp::kMin: return Intrinsic::kLaneMin;
    default: return std::nullopt;
  }
}

// True if `value` is the identity of the combiner: 0, -inf, +inf.
bool IsIdentity(const Expr& value, Intrinsic combiner) {
  Expr v = value;
  while (const auto* cast = v->as<CastNode>()) v = cast->value;
  double x;
  if (const auto* f = v->as<FloatImmNode>()) {
    x = f->value;
  } else if (const auto* i = v->as<IntImmNode>()) {
    x = static_cast<double>(i->value);
  } else {
    return false;
  }
  switch (combiner) {
    case Intrinsic::kLaneSum: return x == 0.0;
    case Intrinsic::kLaneMax: return std::isinf(x) && x < 0;
    case Intrinsic::kLaneMin: return std::isinf(x) && x > 0;
    default: return false;
  }
}

class LaneReductions : public IRMutator {
 public:
  explicit LaneReductions(const PrimFunc& f) : all_lane_loops_(LaneLoops(f->body)) {}

 protected:
  Stmt Mutate(const AllocateNode* node, const Stmt& self) override {
    Stmt body = VisitStmt(node->body);  // inner buffers first
    const BufferNode* buffer = node->buffer.get();
    std::vector<Stmt> stmts = Statements(body);
    for (size_t c = 0; c < stmts.size(); ++c) {
      for (const ForNode* loop : LaneLoops(stmts[c])) {
        if (!ReducesInto(loop, buffer)) continue;
        const int64_t lanes = Lanes(loop, buffer);
        const Intrinsic combiner = CombinerOf(loop, buffer);
        CheckInitialized(stmts, c, buffer, combiner, loop);
        stmts.insert(stmts.begin() + static_cast<std::ptrdiff_t>(c) + 1, Combine(node->buffer, combiner, lanes));
        return MakeAllocate(node->buffer, MakeSeq(std::move(stmts)));
      }
    }
    // A lane loop reducing into a buffer of another scope is refused where
    // that buffer is stored (Mutate(BufferStoreNode)).
    if (body == node->body) return self;
    return MakeAllocate(node->buffer, body);
  }

  Stmt Mutate(const ForNode* node, const Stmt& self) override {
    if (!IsLaneLoop(node)) return IRMutator::Mutate(node, self);
    const ForNode* outer = lane_loop_;
    VarSet outer_vars = std::move(lane_vars_);
    lane_loop_ = node;
    lane_vars_ = DependentVars(node);
    Stmt out = IRMutator::Mutate(node, self);
    lane_loop_ = outer;
    lane_vars_ = std::move(outer_vars);
    return out;
  }

  // A store under a lane loop, to an element every lane stores to, in a
  // buffer that is not local: the lanes would race.
  Stmt Mutate(const BufferStoreNode* node, const Stmt& self) override {
    if (lane_loop_ && node->buffer->scope != "local") {
      if (SharedByLanes(node, lane_vars_)) {
        Refuse("loop '" + lane_loop_->var->name + "' is bound to threadIdx.x but reduces into '" + node->buffer->name +
               "' (" + node->buffer->scope + " memory), which its lanes would race on: cache_write the reduction "
               "in local scope so that each lane keeps a part and the lanes combine them");
      }
    }
    return IRMutator::Mutate(node, self);
  }

 private:
  static std::vector<Stmt> Statements(const Stmt& body) {
    if (const auto* seq = body->as<SeqNode>()) return seq->stmts;
    return {body};
  }

  // The lanes of the group: the loop's constant extent, a power of two of at
  // most a warp, and the extent of every loop bound to threadIdx.x (the
  // block's x dimension), so that a group lies in one warp.
  int64_t Lanes(const ForNode* loop, const BufferNode* buffer) const {
    const int64_t* extent = AsConstInt(loop->extent);
    if (!extent || *extent < 1 || *extent > kWarpSize || (*extent & (*extent - 1)) != 0) {
      Refuse("loop '" + loop->var->name + "' bound to threadIdx.x reduces into '" + buffer->name +
             "' across its lanes, which must be a power of two of at most 32 (one warp); split it by 32 or less first");
    }
    for (const ForNode* other : all_lane_loops_) {
      const int64_t* e = AsConstInt(other->extent);
      if (!e || *e != *extent) {
        Refuse("loop '" + loop->var->name + "' reduces across " + std::to_string(*extent) +
               " lanes of threadIdx.x, but loop '" + other->var->name +
               "' is bound to threadIdx.x with another extent; a lane reduction needs every loop bound to "
               "threadIdx.x to have the same number of lanes");
      }
    }
    return *extent;
  }

  static Intrinsic CombinerOf(const ForNode* loop, const BufferNode* buffer) {
    std::optional<Intrinsic> combiner;
    for (const BufferStoreNode* store : StoresInto(loop->body, buffer)) {
      std::optional<Intrinsic> c = Combiner(store);
      if (!c || (combiner && *c != *combiner)) {
        Refuse("loop '" + loop->var->name + "' bound to threadIdx.x reduces into '" + buffer->name +
               "' with an update that is not one sum, max or min of it; lanes can combine only those");
      }
      combiner = c;
    }
    return *combiner;
  }

  // The buffer's stores before the reduction must all set the identity.
  static void CheckInitialized(const std::vector<Stmt>& stmts, size_t reduction, const BufferNode* buffer,
                               Intrinsic combiner, const ForNode* loop) {
    bool initialized = false;
    for (size_t c = 0; c < reduction; ++c) {
      for (const BufferStoreNode* store : StoresInto(stmts[c], buffer)) {
        if (!IsIdentity(store->value, combiner)) {
          Refuse("loop '" + loop->var->name + "' bound to threadIdx.x reduces into '" + buffer->name +
                 "', which starts from a value other than the reduction's identity; every lane would count it");
        }
        initialized = true;
      }
    }
    if (!initialized) {
      Refuse("loop '" + loop->var->name + "' bound to threadIdx.x reduces into '" + buffer->name +
             "', which is not initialized before the loop");
    }
  }

  static Stmt Combine(const Buffer& buffer, Intrinsic combiner, int64_t lanes) {
    int64_t elements = 1;
    for (const Expr& dim : buffer->shape) {
      const int64_t* n = AsConstInt(dim);
      ICHECK(n) << "local buffer " << buffer->name << " has a shape unknown at compile time";
      elements *= *n;
    }
    std::vector<Stmt> stmts;
    for (int64_t e = 0; e < elements; ++e) {
      std::vector<Expr> index = {MakeInt(e)};
      if (buffer->shape.size() != 1) {
        // Row-major coordinates of element e.
        index.clear();
        int64_t rest = e;
        for (size_t d = buffer->shape.size(); d-- > 0;) {
          const int64_t n = *AsConstInt(buffer->shape[d]);
          index.insert(index.begin(), MakeInt(rest % n));
          rest /= n;
        }
      }
      Expr value = MakeLoad(buffer, index);
      stmts.push_back(MakeStore(buffer, index, MakeCall(combiner, {value, MakeInt(lanes)}, value->dtype)));
    }
    return stmts.size() == 1 ? stmts[0] : MakeSeq(std::move(stmts));
  }

  std::vector<const ForNode*> all_lane_loops_;
  const ForNode* lane_loop_ = nullptr;  // the innermost lane loop being visited
  VarSet lane_vars_;                    // its variable and those computed from it
};

}  // namespace

PrimFunc LowerLaneReductions(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kIII) << "lower_lane_reductions expects a stage III function, got " << ToString(f->stage);
  if (!f->body || LaneLoops(f->body).empty()) return f;
  Stmt body = LaneReductions(f).VisitStmt(f->body);
  return body == f->body ? f : WithBody(f, body);
}

}  // namespace sparsetir
