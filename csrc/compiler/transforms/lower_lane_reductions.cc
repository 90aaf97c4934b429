#include "transforms/lower_lane_reductions.h"

#include <limits>
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
// The most threads a block may have: the most lanes a block-wide group has.
constexpr int64_t kMaxBlockLanes = 1024;

[[noreturn]] void Refuse(const std::string& message) { throw UserError(UserErrorKind::kSchedule, message); }

// A loop bound to threadIdx.x. One whose extent reads a buffer is left to
// the code generator, which refuses it for that (a launch extent must be
// known to the host) before any question of reductions.
bool IsLaneLoop(const ForNode* loop) {
  return ThreadAxis(loop) == 0 && !ReadsBuffer(loop->extent);
}

bool IsThreadLoop(const ForNode* loop) { return ThreadAxis(loop) >= 0; }

// A loop bound to a thread axis that runs one thread (index 0): every
// thread of the block is that one along the axis.
bool IsSingleThreadLoop(const ForNode* loop) {
  const int64_t* extent = AsConstInt(loop->extent);
  const int64_t* min = AsConstInt(loop->min);
  return IsThreadLoop(loop) && extent && *extent == 1 && min && *min == 0;
}

// The first loop bound to threadIdx.y or threadIdx.z with more than one
// thread, or null: with none, a block's threads are its lanes.
const ForNode* OtherThreadAxis(const Stmt& s) {
  struct Finder : IRVisitor {
    const ForNode* found = nullptr;
    void Visit(const ForNode* n) override {
      if (!found && ThreadAxis(n) > 0 && !IsSingleThreadLoop(n)) found = n;
      IRVisitor::Visit(n);
    }
  } finder;
  finder.VisitStmt(s);
  return finder.found;
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

// The lane loop's variable and the lets computed from it.
using VarSet = std::set<const VarNode*>;

VarSet DependentVars(const ForNode* loop) { return VarsComputedFrom(loop->body, loop->var.get()); }

// True if the store's element does not depend on the lane: every lane of
// the loop stores to it.
bool SharedByLanes(const BufferStoreNode* store, const VarSet& lane_vars) {
  for (const Expr& index : store->indices) {
    if (UsesAny(index, lane_vars)) return false;
  }
  return true;
}

// True if `cond` holds for one value of the lane loop's variable `lane` at
// most: it is, or has as a conjunct, `lane == e` (or `e == lane`) with e free
// of the lane. A store under it is one lane's, whatever its index.
bool PinsTheLane(const Expr& cond, const VarNode* lane, const VarSet& lane_vars) {
  const auto* op = cond->as<BinaryNode>();
  if (!op) return false;
  if (op->op == BinaryOp::kAnd) return PinsTheLane(op->a, lane, lane_vars) || PinsTheLane(op->b, lane, lane_vars);
  if (op->op != BinaryOp::kEQ) return false;
  auto is_lane = [lane](const Expr& e) { return e->as<VarNode>() == lane; };
  return (is_lane(op->a) && !UsesAny(op->b, lane_vars)) || (is_lane(op->b) && !UsesAny(op->a, lane_vars));
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

// The identity of the combiner in `dtype`.
Expr Identity(Intrinsic combiner, DataType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  if (IsFloat(dtype)) {
    return MakeFloat(combiner == Intrinsic::kLaneSum ? 0.0 : combiner == Intrinsic::kLaneMax ? -inf : inf, dtype);
  }
  const int64_t low = dtype == DataType::kInt32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  const int64_t high = dtype == DataType::kInt32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  return MakeInt(combiner == Intrinsic::kLaneSum ? 0 : combiner == Intrinsic::kLaneMax ? low : high, dtype);
}

Expr Combine(Intrinsic combiner, Expr a, Expr b) {
  const BinaryOp op =
      combiner == Intrinsic::kLaneSum ? BinaryOp::kAdd : combiner == Intrinsic::kLaneMax ? BinaryOp::kMax : BinaryOp::kMin;
  return MakeBinary(op, std::move(a), std::move(b));
}

// The coordinates of every element of a local buffer (row-major).
std::vector<std::vector<Expr>> Elements(const Buffer& buffer) {
  std::vector<int64_t> shape;
  int64_t count = 1;
  for (const Expr& dim : buffer->shape) {
    const int64_t* n = AsConstInt(dim);
    ICHECK(n) << "local buffer " << buffer->name << " has a shape unknown at compile time";
    shape.push_back(*n);
    count *= *n;
  }
  std::vector<std::vector<Expr>> elements;
  for (int64_t e = 0; e < count; ++e) {
    std::vector<Expr> index(shape.size());
    int64_t rest = e;
    for (size_t d = shape.size(); d-- > 0;) {
      index[d] = MakeInt(rest % shape[d]);
      rest /= shape[d];
    }
    elements.push_back(std::move(index));
  }
  return elements;
}

// True if `s` loads from `buffer` other than in the updates of `lane_loops`
// (which read the element they write).
bool ReadsOutsideUpdates(const Stmt& s, const BufferNode* buffer, const std::vector<const ForNode*>& lane_loops) {
  struct Finder : IRVisitor {
    const BufferNode* buffer;
    const std::vector<const ForNode*>* lane_loops;
    bool found = false;
    void Visit(const ForNode* n) override {
      for (const ForNode* lane : *lane_loops) {
        if (n == lane) return;  // its updates are checked by CombinerOf
      }
      IRVisitor::Visit(n);
    }
    void Visit(const BufferLoadNode* n) override {
      if (n->buffer.get() == buffer) found = true;
      IRVisitor::Visit(n);
    }
  } finder;
  finder.buffer = buffer;
  finder.lane_loops = &lane_loops;
  finder.VisitStmt(s);
  return finder.found;
}

class LaneReductions : public IRMutator {
 public:
  explicit LaneReductions(const PrimFunc& f)
      : all_lane_loops_(LaneLoops(f->body)), other_thread_axis_(OtherThreadAxis(f->body)) {}

 protected:
  // A local buffer that lanes reduce into: each outermost loop nest holding
  // such a lane loop starts every element from the combiner's identity (the
  // value before is kept aside), and after the nest the lanes' parts are
  // combined and joined to that value.
  Stmt Mutate(const AllocateNode* node, const Stmt& self) override {
    Stmt body = VisitStmt(node->body);  // inner buffers first
    buffer_ = node->buffer;
    enclosing_thread_loop_ = thread_loops_.empty() ? nullptr : thread_loops_.back();
    Stmt rewritten = WrapNests(body);
    buffer_ = nullptr;
    if (rewritten == node->body) return self;
    return MakeAllocate(node->buffer, rewritten);
  }

  Stmt Mutate(const ForNode* node, const Stmt& self) override {
    const bool divergent = IsThreadLoop(node) && !IsSingleThreadLoop(node);
    if (divergent) thread_loops_.push_back(node);
    Stmt out = MutateLoop(node, self);
    if (divergent) thread_loops_.pop_back();
    return out;
  }

  Stmt MutateLoop(const ForNode* node, const Stmt& self) {
    if (!IsLaneLoop(node)) return IRMutator::Mutate(node, self);
    const ForNode* outer = lane_loop_;
    VarSet outer_vars = std::move(lane_vars_);
    const int outer_pinned = pinned_;
    lane_loop_ = node;
    lane_vars_ = DependentVars(node);
    pinned_ = 0;
    Stmt out = IRMutator::Mutate(node, self);
    lane_loop_ = outer;
    lane_vars_ = std::move(outer_vars);
    pinned_ = outer_pinned;
    return out;
  }

  // The then-case of `if lane == e:` is one lane's (PinsTheLane).
  Stmt Mutate(const IfThenElseNode* node, const Stmt& self) override {
    if (!lane_loop_ || !PinsTheLane(node->cond, lane_loop_->var.get(), lane_vars_)) {
      return IRMutator::Mutate(node, self);
    }
    ++pinned_;
    Stmt then_case = VisitStmt(node->then_case);
    --pinned_;
    Stmt else_case = VisitStmt(node->else_case);
    if (then_case == node->then_case && else_case == node->else_case) return self;
    return WithSpan(MakeIf(node->cond, then_case, else_case), node->span);
  }

  // A store under a lane loop of several lanes, to an element every lane
  // stores to, in a buffer that is not local: the lanes would race (unless a
  // condition lets one lane store).
  Stmt Mutate(const BufferStoreNode* node, const Stmt& self) override {
    if (lane_loop_ && !IsSingleThreadLoop(lane_loop_) && !pinned_ && node->buffer->scope != "local") {
      if (SharedByLanes(node, lane_vars_)) {
        Refuse("loop '" + lane_loop_->var->name + "' is bound to threadIdx.x but reduces into '" + node->buffer->name +
               "' (" + node->buffer->scope + " memory), which its lanes would race on: cache_write the reduction "
               "in local scope so that each lane keeps a part and the lanes combine them");
      }
    }
    return IRMutator::Mutate(node, self);
  }

 private:
  // Descends through statements that are not loops; wraps each loop nest
  // that holds a lane loop reducing into buffer_.
  Stmt WrapNests(const Stmt& s) {
    if (!s) return s;
    if (const auto* seq = s->as<SeqNode>()) {
      std::vector<Stmt> stmts;
      bool changed = false;
      for (const Stmt& child : seq->stmts) {
        stmts.push_back(WrapNests(child));
        changed |= stmts.back() != child;
      }
      return changed ? MakeSeq(std::move(stmts)) : s;
    }
    if (const auto* let = s->as<LetNode>()) {
      Stmt body = WrapNests(let->body);
      return body == let->body ? s : MakeLet(let->var, let->value, body);
    }
    if (const auto* block = s->as<BlockNode>()) {
      Stmt body = WrapNests(block->body);
      return body == block->body ? s : MakeBlock(block->name, body);
    }
    if (const auto* alloc = s->as<AllocateNode>()) {
      Stmt body = WrapNests(alloc->body);
      return body == alloc->body ? s : MakeAllocate(alloc->buffer, body);
    }
    if (const auto* branch = s->as<IfThenElseNode>()) {
      Stmt then_case = WrapNests(branch->then_case), else_case = WrapNests(branch->else_case);
      if (then_case == branch->then_case && else_case == branch->else_case) return s;
      return MakeIf(branch->cond, then_case, else_case);
    }
    if (s->as<ForNode>()) return WrapNest(s);
    return s;
  }

  Stmt WrapNest(const Stmt& nest) {
    const BufferNode* buffer = buffer_.get();
    std::vector<const ForNode*> reducing;
    for (const ForNode* loop : LaneLoops(nest)) {
      if (ReducesInto(loop, buffer)) reducing.push_back(loop);
    }
    if (reducing.empty()) return nest;
    const int64_t lanes = Lanes(reducing[0], buffer);
    const Intrinsic combiner = CombinerOf(reducing[0], buffer);
    for (const ForNode* loop : reducing) {
      if (Lanes(loop, buffer) != lanes || CombinerOf(loop, buffer) != combiner) {
        Refuse("loops '" + reducing[0]->var->name + "' and '" + loop->var->name + "' reduce into '" + buffer->name +
               "' across lanes in different ways; one loop nest combines its lanes' parts once");
      }
    }
    if (ReadsOutsideUpdates(nest, buffer, reducing)) {
      Refuse("loop '" + reducing[0]->var->name + "' bound to threadIdx.x reduces into '" + buffer->name +
             "', which the same loop nest also reads elsewhere; there a lane holds only its part (read it after "
             "the loop nest)");
    }
    // Element by element: keep the value, start from the identity, run
    // the nest, then join the lanes' combined parts to the kept value.
    std::vector<Stmt> before, after;
    std::vector<std::pair<Var, Expr>> kept;
    const DataType dtype = buffer->dtype;
    int64_t e = 0;
    for (const std::vector<Expr>& index : Elements(buffer_)) {
      Var start = MakeVar(buffer->name + "_start" + (e++ ? std::to_string(e - 1) : ""), dtype);
      kept.emplace_back(start, MakeLoad(buffer_, index));
      before.push_back(MakeStore(buffer_, index, Identity(combiner, dtype)));
      Expr part = MakeLoad(buffer_, index);
      Expr whole = MakeCall(combiner, {part, MakeInt(lanes)}, dtype);
      after.push_back(MakeStore(buffer_, index, Combine(combiner, start, whole)));
    }
    std::vector<Stmt> stmts = before;
    stmts.push_back(nest);
    stmts.insert(stmts.end(), after.begin(), after.end());
    Stmt out = MakeSeq(std::move(stmts));
    for (size_t k = kept.size(); k-- > 0;) out = MakeLet(kept[k].first, kept[k].second, out);
    return out;
  }

  // The lanes of the group: the loop's constant extent, a power of two, and
  // the extent of every loop bound to threadIdx.x (the block's x
  // dimension). Up to a warp, a group lies in one warp and combines with
  // shuffles alone. Beyond a warp (up to 1024), the group is the whole block
  // and its warps combine their parts through shared memory between two
  // __syncthreads, which every thread of the block must reach: the block has
  // no other thread axis, and the combination sits under no loop bound to a
  // thread (a branch or trip count there could differ between threads).
  int64_t Lanes(const ForNode* loop, const BufferNode* buffer) const {
    const int64_t* extent = AsConstInt(loop->extent);
    if (!extent || *extent < 1 || *extent > kMaxBlockLanes || (*extent & (*extent - 1)) != 0) {
      Refuse("loop '" + loop->var->name + "' bound to threadIdx.x reduces into '" + buffer->name +
             "' across its lanes, which must be a power of two of at most 32 (one warp) or, for a block of "
             "threads that reduces together, of at most 1024; split it by such a factor first");
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
    if (*extent > kWarpSize) RequireWholeBlock(loop, buffer, *extent);
    return *extent;
  }

  void RequireWholeBlock(const ForNode* loop, const BufferNode* buffer, int64_t lanes) const {
    const std::string what = "loop '" + loop->var->name + "' reduces into '" + buffer->name + "' across " +
                             std::to_string(lanes) + " lanes, more than a warp: the block's warps combine their "
                             "parts through shared memory at a __syncthreads that every thread must reach, ";
    if (other_thread_axis_) {
      Refuse(what + "so the block must be those lanes alone, but loop '" + other_thread_axis_->var->name +
             "' is bound to " + other_thread_axis_->thread_tag + " (bind it to a blockIdx axis, or reduce over "
             "at most 32 lanes)");
    }
    if (enclosing_thread_loop_) {
      Refuse(what + "but '" + buffer->name + "' is allocated inside loop '" + enclosing_thread_loop_->var->name +
             "', bound to " + enclosing_thread_loop_->thread_tag + ", whose threads need not all get there "
             "(cache_write it outside the loops bound to threads)");
    }
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

  std::vector<const ForNode*> all_lane_loops_;
  const ForNode* other_thread_axis_;             // a loop bound to threadIdx.y/z with threads, or null
  std::vector<const ForNode*> thread_loops_;     // the loops bound to threads (more than one) around the visit
  const ForNode* enclosing_thread_loop_ = nullptr;  // the innermost of them around buffer_'s allocation
  Buffer buffer_;                       // the local buffer whose nests WrapNests looks for
  const ForNode* lane_loop_ = nullptr;  // the innermost lane loop being visited
  VarSet lane_vars_;                    // its variable and those computed from it
  int pinned_ = 0;                      // inside that many `if lane == e:` of it: one lane stores
};

}  // namespace

PrimFunc LowerLaneReductions(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kIII) << "lower_lane_reductions expects a stage III function, got " << ToString(f->stage);
  if (!f->body || LaneLoops(f->body).empty()) return f;
  Stmt body = LaneReductions(f).VisitStmt(f->body);
  return body == f->body ? f : WithBody(f, body);
}

}  // namespace sparsetir
