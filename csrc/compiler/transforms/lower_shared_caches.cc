#include "transforms/lower_shared_caches.h"

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

constexpr const char* kThreadAxes[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
// The rounds of a fill whose loads a thread issues together (an unrolled
// group); a longer fill is a loop over such groups. Four keep a loop's loads
// in flight at once for the price of a few registers: fully unrolled, the
// 16 rounds of a 16 x 32 half tile on 32 threads took bsrmm's tensor-core
// kernel from 40 to 168 registers (ptxas, sm_90).
constexpr int64_t kRoundsInFlight = 4;

[[noreturn]] void Refuse(const std::string& message) { throw UserError(UserErrorKind::kSchedule, message); }

// The block's threads per axis, as the launch takes them: the largest extent
// bound to the axis, 1 where none is; -1 where an extent is not a constant.
std::array<int64_t, 3> BlockShape(const Stmt& s) {
  struct Finder : IRVisitor {
    std::array<int64_t, 3> shape = {1, 1, 1};
    void Visit(const ForNode* n) override {
      if (const int axis = ThreadAxis(n); axis >= 0) {
        const int64_t *min = AsConstInt(n->min), *extent = AsConstInt(n->extent);
        if (!min || !extent || shape[axis] < 0) {
          shape[axis] = -1;
        } else {
          shape[axis] = std::max(shape[axis], *extent);
        }
      }
      IRVisitor::Visit(n);
    }
  } finder;
  finder.VisitStmt(s);
  return finder.shape;
}

// Whether code loads from `buffer`, and whether it writes it (a store, or an
// atomic or an mma accumulating into it).
struct Touches : IRVisitor {
  explicit Touches(const BufferNode* buffer) : buffer(buffer) {}
  const BufferNode* buffer;
  bool reads = false, writes = false;

 protected:
  void Visit(const BufferLoadNode* n) override {
    reads |= n->buffer.get() == buffer;
    IRVisitor::Visit(n);
  }
  void Visit(const BufferStoreNode* n) override {
    writes |= n->buffer.get() == buffer;
    IRVisitor::Visit(n);
  }
  void Visit(const AtomicAddNode* n) override {
    writes |= n->target->as<BufferLoadNode>()->buffer.get() == buffer;
    IRVisitor::Visit(n);
  }
  void Visit(const MmaNode* n) override {
    writes |= n->acc->as<BufferLoadNode>()->buffer.get() == buffer;
    IRVisitor::Visit(n);
  }
};

bool Writes(const Stmt& s, const BufferNode* buffer) {
  Touches touches(buffer);
  touches.VisitStmt(s);
  return touches.writes;
}

bool Reads(const Expr& e, const BufferNode* buffer) {
  Touches touches(buffer);
  touches.VisitExpr(e);
  return touches.reads;
}

// The nest that fills a cache (cache_read's copy in): loops from 0 of
// constant extents, with lets between them, around one store into the cache
// of a value that does not read it.
struct Fill {
  std::vector<const ForNode*> loops;
  std::vector<const LetNode*> outer_lets;  // before the first loop: the same for every element
  std::vector<const LetNode*> lets;        // between the loops
  const BufferStoreNode* store = nullptr;
};

std::optional<Fill> AsFill(const Stmt& s, const BufferNode* cache) {
  Fill fill;
  Stmt at = s;
  for (;;) {
    if (const auto* loop = at->as<ForNode>()) {
      const int64_t *min = AsConstInt(loop->min), *extent = AsConstInt(loop->extent);
      if (!min || *min != 0 || !extent || loop->for_kind == ForKind::kThreadBinding) return std::nullopt;
      fill.loops.push_back(loop);
      at = loop->body;
    } else if (const auto* let = at->as<LetNode>()) {
      (fill.loops.empty() ? fill.outer_lets : fill.lets).push_back(let);
      at = let->body;
    } else {
      break;
    }
  }
  fill.store = at->as<BufferStoreNode>();
  if (!fill.store || fill.store->buffer.get() != cache || Reads(fill.store->value, cache)) return std::nullopt;
  return fill;
}

// Spreads each shared cache's fill over the block's threads; in a kernel
// that synchronizes its own shared buffers (`own_barriers`: it writes
// T.sp.sync_threads()), leaves them as they are and checks that every
// thread of the block reaches each barrier.
class Cooperative : public IRMutator {
 public:
  Cooperative(std::array<int64_t, 3> block, bool own_barriers) : block_(block), own_barriers_(own_barriers) {}

 protected:
  Stmt Mutate(const ForNode* n, const Stmt& self) override {
    if (const int axis = ThreadAxis(n); axis >= 0) {
      threads_[axis].push_back(n);
      variant_.insert(n->var.get());
      Stmt out = IRMutator::Mutate(n, self);
      threads_[axis].pop_back();
      return out;
    }
    const bool divergent = UsesAny(n->min, variant_) || UsesAny(n->extent, variant_);
    if (!divergent) return IRMutator::Mutate(n, self);
    variant_.insert(n->var.get());
    divergence_.push_back("loop '" + n->var->name + "', whose bounds depend on the thread");
    Stmt out = IRMutator::Mutate(n, self);
    divergence_.pop_back();
    return out;
  }

  Stmt Mutate(const LetNode* n, const Stmt& self) override {
    if (UsesAny(n->value, variant_)) variant_.insert(n->var.get());
    return IRMutator::Mutate(n, self);
  }

  Stmt Mutate(const IfThenElseNode* n, const Stmt& self) override {
    if (!UsesAny(n->cond, variant_)) return IRMutator::Mutate(n, self);
    divergence_.push_back("the condition '" + Print(n->cond) + "', which depends on the thread");
    Stmt out = IRMutator::Mutate(n, self);
    divergence_.pop_back();
    return out;
  }

  Stmt Mutate(const BarrierNode* n, const Stmt& self) override {
    const std::string barrier = "T.sp.sync_threads()";
    if (!divergence_.empty()) {
      Refuse(barrier + " waits for every thread of the block, but it lies under " + divergence_.back() +
             ": a thread that skips it would leave the others waiting. Write it where every thread of the block "
             "runs alike, and keep the thread's condition inside");
    }
    for (int axis = 0; axis < 3; ++axis) {
      if (threads_[axis].empty()) continue;
      const ForNode* loop = threads_[axis].back();
      if (!SpansAxis(loop, axis)) {
        Refuse(barrier + " lies inside loop '" + loop->var->name + "', bound to " + kThreadAxes[axis] + " over " +
               Print(loop->extent) + (block_[axis] < 0 ? " (not a constant)" : " of the block's " +
               std::to_string(block_[axis]) + " threads") + ": every thread of the block must reach it. Bind the "
               "loops of an axis to the same constant extent");
      }
    }
    return self;
  }

  Stmt Mutate(const AllocateNode* n, const Stmt& self) override {
    if (n->buffer->scope != "shared" || own_barriers_) return IRMutator::Mutate(n, self);
    const std::string cache = "shared cache '" + n->buffer->name + "'";
    if (!divergence_.empty()) {
      Refuse(cache + " is filled by all the threads of its block between two __syncthreads, but it lies under " +
             divergence_.back() + ": a thread that skips it would miss the barriers. Cache at a loop that every "
             "thread of the block runs alike");
    }
    // Lets the cache rewrite kept at the top of its body (a fused loop's row)
    // go around both the fill and the rest, so that the fill stays the first
    // statement, where the code generator puts the barriers.
    std::vector<const LetNode*> lets;
    Stmt body = n->body;
    while (const auto* let = body->as<LetNode>()) {
      lets.push_back(let);
      body = let->body;
    }
    const auto* seq = body->as<SeqNode>();
    std::optional<Fill> fill;
    if (seq && seq->stmts.size() >= 2) fill = AsFill(seq->stmts[0], n->buffer.get());
    bool written = !fill;
    for (size_t i = 1; seq && i < seq->stmts.size(); ++i) written |= Writes(seq->stmts[i], n->buffer.get());
    if (written) {
      Refuse(cache + " is written by the loop it serves; on cuda a shared cache is filled from memory once per "
             "iteration and then only read (sch.cache_read). Cache values the loop writes in local scope");
    }
    std::vector<Stmt> rest;
    for (size_t i = 1; i < seq->stmts.size(); ++i) rest.push_back(VisitStmt(seq->stmts[i]));
    auto wrap = [&](Stmt s) {
      for (size_t i = lets.size(); i-- > 0;) s = MakeLet(lets[i]->var, lets[i]->value, s);
      return s;
    };
    return MakeAllocate(n->buffer, MakeSeq({wrap(Spread(*fill, cache)), wrap(MakeSeq(rest))}));
  }

 private:
  // Whether `loop`, bound to thread axis `axis`, runs over all the block's
  // threads along it: from 0, over the block's (constant) extent.
  bool SpansAxis(const ForNode* loop, int axis) const {
    const int64_t *min = AsConstInt(loop->min), *extent = AsConstInt(loop->extent);
    return block_[axis] >= 0 && min && *min == 0 && extent && *extent == block_[axis];
  }

  // The block's flat thread index (x fastest) and its number of threads.
  std::pair<Expr, int64_t> FlatThread(const std::string& cache) const {
    Expr index;
    int64_t threads = 1;
    for (int axis = 0; axis < 3; ++axis) {
      const std::string name = kThreadAxes[axis];
      if (block_[axis] == 1) {
        // One thread along the axis: its loop's variable (always 0), where
        // one encloses the cache, still names the fill's thread.
        if (!threads_[axis].empty()) index = index ? Add(index, Mul(threads_[axis].back()->var, MakeInt(threads)))
                                                   : Expr(threads_[axis].back()->var);
        continue;
      }
      if (block_[axis] < 0) {
        Refuse(cache + " is filled by the block's threads together, but a loop bound to " + name +
               " has an extent that is not a constant; bind loops of constant extent (split first)");
      }
      if (threads_[axis].empty()) {
        Refuse(cache + " is filled by the block's threads together, but no loop bound to " + name +
               " encloses it; cache at a loop inside the loops bound to the block's threads");
      }
      const ForNode* loop = threads_[axis].back();
      if (!SpansAxis(loop, axis)) {
        Refuse(cache + " lies inside loop '" + loop->var->name + "', bound to " + name + " over " +
               Print(loop->extent) + " of the block's " + std::to_string(block_[axis]) +
               " threads: the others would miss the barriers around its fill. Bind the loops of an axis to the "
               "same extent");
      }
      index = index ? Add(index, Mul(loop->var, MakeInt(threads))) : Expr(loop->var);
      threads *= block_[axis];
    }
    return {index ? index : MakeInt(0), threads};
  }

  // The fill as rounds of the block's threads, each copying one element of
  // the nest in row-major order.
  Stmt Spread(const Fill& fill, const std::string& cache) const {
    auto [thread, threads] = FlatThread(cache);
    int64_t total = 1;
    for (const ForNode* loop : fill.loops) total *= *AsConstInt(loop->extent);
    const Var element = MakeVar("fill_element", DataType::kInt32);
    // Each loop variable is its digit of the element, the last the fastest.
    VarMap digits;
    int64_t stride = 1;
    for (size_t t = fill.loops.size(); t-- > 0;) {
      const ForNode* loop = fill.loops[t];
      const int64_t extent = *AsConstInt(loop->extent);
      Expr digit = stride == 1 ? Expr(element) : MakeBinary(BinaryOp::kFloorDiv, element, MakeInt(stride));
      if (t > 0) digit = MakeBinary(BinaryOp::kFloorMod, digit, MakeInt(extent));
      digits[loop->var.get()] = extent == 1 ? MakeInt(0) : digit;
      stride *= extent;
    }
    Stmt body = MakeStore(fill.store->buffer, fill.store->indices, fill.store->value);
    for (size_t i = fill.lets.size(); i-- > 0;) body = MakeLet(fill.lets[i]->var, fill.lets[i]->value, body);
    body = Simplify(Substitute(body, digits));  // a one-element loop's digit is 0: no "0 * 16" left
    const int64_t rounds = (total + threads - 1) / threads;
    const int64_t groups = (rounds + kRoundsInFlight - 1) / kRoundsInFlight;
    const int64_t in_group = groups == 1 ? rounds : kRoundsInFlight;
    if (total % (threads * in_group) != 0) body = MakeIf(MakeBinary(BinaryOp::kLT, element, MakeInt(total)), body);
    const Var round = MakeVar("fill_round", DataType::kInt32), group = MakeVar("fill_group", DataType::kInt32);
    const Expr first = groups > 1 ? Mul(group, MakeInt(threads * in_group)) : MakeInt(0);
    body = MakeLet(element, Simplify(Add(Add(first, Mul(round, MakeInt(threads))), thread)), body);
    Stmt spread = MakeFor(round, MakeInt(0), MakeInt(in_group), ForKind::kUnrolled, body);
    if (groups > 1) spread = MakeFor(group, MakeInt(0), MakeInt(groups), ForKind::kSerial, spread);
    for (size_t i = fill.outer_lets.size(); i-- > 0;) {
      spread = MakeLet(fill.outer_lets[i]->var, fill.outer_lets[i]->value, spread);
    }
    return spread;
  }

  const std::array<int64_t, 3> block_;
  const bool own_barriers_;
  std::array<std::vector<const ForNode*>, 3> threads_;  // the enclosing loops bound to each axis
  std::set<const VarNode*> variant_;                     // values that differ between the block's threads
  std::vector<std::string> divergence_;                  // the enclosing thread-dependent control flow
};

bool HasSharedCache(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit(const AllocateNode* n) override {
      found |= n->buffer->scope == "shared";
      IRVisitor::Visit(n);
    }
  } finder;
  finder.VisitStmt(s);
  return finder.found;
}

}  // namespace

PrimFunc LowerSharedCaches(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kIII) << "lower_shared_caches expects a stage III function, got " << ToString(f->stage);
  if (!f->body) return f;
  const bool own_barriers = HasBarrier(f->body);
  if (!own_barriers && !HasSharedCache(f->body)) return f;
  return WithBody(f, Cooperative(BlockShape(f->body), own_barriers).VisitStmt(f->body));
}

}  // namespace sparsetir
