#include "transforms/lower_mma_fragments.h"

#include <algorithm>
#include <set>
#include <vector>

#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/linear_form.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

constexpr int64_t kLanes = 32;
constexpr int64_t kSlots = 4;  // accumulator elements of a 16 x 8 tile per lane
constexpr const char* kLaneAxis = "threadIdx.x";

[[noreturn]] void Refuse(const std::string& message) { throw UserError(UserErrorKind::kSchedule, message); }

bool IsLaneLoop(const ForNode* loop) {
  return ThreadAxis(loop) == 0;
}

Expr Int(int64_t v) { return MakeInt(v); }
Expr FloorDiv(Expr a, int64_t b) { return MakeBinary(BinaryOp::kFloorDiv, std::move(a), Int(b)); }
Expr FloorMod(Expr a, int64_t b) { return MakeBinary(BinaryOp::kFloorMod, std::move(a), Int(b)); }

// The buffers that mmas accumulate into.
std::set<const BufferNode*> Accumulators(const Stmt& s) {
  struct Finder : IRVisitor {
    std::set<const BufferNode*> found;
    void Visit(const MmaNode* n) override { found.insert(n->acc->as<BufferLoadNode>()->buffer.get()); }
  } finder;
  finder.VisitStmt(s);
  return finder.found;
}

// The indices of every load and store of `buffer` under `s` other than as an
// mma's accumulator, and whether `s` holds loops or mmas.
struct Touches : IRVisitor {
  const BufferNode* buffer;
  std::vector<std::vector<Expr>> accesses;
  bool loops = false, mmas = false;
  explicit Touches(const BufferNode* b) : buffer(b) {}
  void Visit(const BufferLoadNode* n) override {
    if (n->buffer.get() == buffer) accesses.push_back(n->indices);
    IRVisitor::Visit(n);
  }
  void Visit(const BufferStoreNode* n) override {
    if (n->buffer.get() == buffer) accesses.push_back(n->indices);
    IRVisitor::Visit(n);
  }
  void Visit(const ForNode* n) override {
    loops = true;
    IRVisitor::Visit(n);
  }
  void Visit(const MmaNode* n) override {
    mmas = true;
    VisitExpr(n->a);
    VisitExpr(n->b);
  }
};

// A loop's variable as mixed-radix digit of an accumulator dimension:
// index = sum of coefficient * variable, digits from most significant.
struct Digit {
  const VarNode* var;
  int64_t coefficient, extent;
};

// The loop nest from `root` (through blocks) as digits of the accumulator's
// two dimensions, if its one access pattern walks every element once.
class TileWalk {
 public:
  TileWalk(const ForNode* root, const BufferNode* acc, int64_t rows, int64_t cols) : acc_(acc) {
    loops_.push_back(root);
    Stmt s = root->body;
    for (;;) {
      if (const auto* loop = s->as<ForNode>()) {
        loops_.push_back(loop);
        s = loop->body;
      } else if (const auto* block = s->as<BlockNode>()) {
        block_ = block->name;
        s = block->body;
      } else if (const auto* let = s->as<LetNode>()) {  // an invariant hoisted between the loops
        lets_.push_back(let);
        s = let->body;
      } else {
        break;
      }
    }
    body_ = s;
    ok_ = Analyze(rows, cols);
  }
  bool ok() const { return ok_; }
  const Stmt& body() const { return body_; }
  const std::string& block() const { return block_; }
  // The lets between the loops, outermost first.
  const std::vector<const LetNode*>& lets() const { return lets_; }
  const std::vector<Digit>& digits(int d) const { return digits_[d]; }

 private:
  bool Analyze(int64_t rows, int64_t cols) {
    std::map<const VarNode*, int64_t> extents;
    for (const ForNode* loop : loops_) {
      const int64_t* min = AsConstInt(loop->min);
      const int64_t* extent = AsConstInt(loop->extent);
      if (!min || *min != 0 || !extent || loop->for_kind == ForKind::kThreadBinding ||
          loop->for_kind == ForKind::kParallel) {
        return false;
      }
      extents[loop->var.get()] = *extent;
    }
    Touches touches(acc_);
    touches.VisitStmt(body_);
    for (const LetNode* let : lets_) touches.VisitExpr(let->value);
    if (touches.loops || touches.mmas || touches.accesses.empty()) return false;
    // Indices through the lets between the loops (hoisted invariants).
    VarMap lets;
    for (const LetNode* let : lets_) lets[let->var.get()] = Substitute(let->value, lets);
    std::vector<Expr> indices;
    for (const Expr& index : touches.accesses[0]) indices.push_back(Substitute(index, lets));
    for (const std::vector<Expr>& other : touches.accesses) {
      for (size_t d = 0; d < indices.size(); ++d) {
        if (!StructuralEqual(Substitute(other[d], lets), indices[d])) return false;
      }
    }
    std::set<const VarNode*> used;
    const int64_t sizes[2] = {rows, cols};
    for (int d = 0; d < 2; ++d) {
      const std::optional<LinearForm> form = AsLinear(indices[d]);
      if (!form || form->constant != 0) return false;
      for (const auto& [var, coefficient] : form->coefficients) {
        auto extent = extents.find(var);
        if (extent == extents.end() || coefficient <= 0 || !used.insert(var).second) return false;
        digits_[d].push_back({var, coefficient, extent->second});
      }
      std::sort(digits_[d].begin(), digits_[d].end(),
                [](const Digit& a, const Digit& b) { return a.coefficient > b.coefficient; });
      int64_t place = 1;  // from the least significant digit: coefficient = product of the extents below
      for (size_t t = digits_[d].size(); t-- > 0;) {
        if (digits_[d][t].coefficient != place) return false;
        place *= digits_[d][t].extent;
      }
      if (place != sizes[d]) return false;
    }
    // Every loop walks the accumulator (a loop that runs once walks nothing).
    for (const ForNode* loop : loops_) {
      if (!used.count(loop->var.get()) && extents[loop->var.get()] != 1) return false;
    }
    return true;
  }

  const BufferNode* acc_;
  std::vector<const ForNode*> loops_;
  std::vector<const LetNode*> lets_;
  std::string block_;
  Stmt body_;
  std::vector<Digit> digits_[2];
  bool ok_ = false;
};

// Swaps every access of one buffer for one element of another.
class SwapAccess : public IRMutator {
 public:
  SwapAccess(const BufferNode* from, Buffer to, std::vector<Expr> at)
      : from_(from), to_(std::move(to)), at_(std::move(at)) {}

 protected:
  Expr Mutate(const BufferLoadNode* n, const Expr& self) override {
    if (n->buffer.get() != from_) return IRMutator::Mutate(n, self);
    return MakeLoad(to_, at_);
  }
  Stmt Mutate(const BufferStoreNode* n, const Stmt& self) override {
    if (n->buffer.get() != from_) return IRMutator::Mutate(n, self);
    return MakeStore(to_, at_, VisitExpr(n->value));
  }

 private:
  const BufferNode* from_;
  Buffer to_;
  std::vector<Expr> at_;
};

// The rewrite inside one accumulator's allocation (see the header).
class Fragments : public IRMutator {
 public:
  Fragments(const Buffer& acc, Buffer fragment, Var lane)
      : acc_(acc), fragment_(std::move(fragment)), lane_(std::move(lane)) {
    rows_ = *AsConstInt(acc->shape[0]);
    cols_ = *AsConstInt(acc->shape[1]);
  }

 protected:
  Stmt Mutate(const MmaNode* n, const Stmt& self) override {
    const auto* acc = n->acc->as<BufferLoadNode>();
    if (acc->buffer.get() != acc_.get()) return self;
    const Expr tile = Simplify(Add(Mul(Aligned(acc->indices[0], 16, "row"), Int(cols_ / 8)),
                                   Aligned(acc->indices[1], 8, "column")));
    return MakeMma(n->shape, MakeLoad(fragment_, {tile, Int(0)}), n->a, n->b, n->strides);
  }

  Stmt Mutate(const ForNode* n, const Stmt& self) override {
    if (IsLaneLoop(n)) {
      Refuse("loop '" + n->var->name + "' is bound to threadIdx.x inside the code that owns mma accumulator '" +
             acc_->name + "', whose lanes are the warp's (threadIdx.x is the lane of the mma)");
    }
    Touches touches(acc_.get());
    touches.VisitStmt(n->body);
    if (touches.accesses.empty()) return IRMutator::Mutate(n, self);
    TileWalk walk(n, acc_.get(), rows_, cols_);
    if (!walk.ok()) return IRMutator::Mutate(n, self);
    return LanesSlots(walk);
  }

  Expr Mutate(const BufferLoadNode* n, const Expr& self) override {
    if (n->buffer.get() == acc_.get()) Stray();
    return IRMutator::Mutate(n, self);
  }

  Stmt Mutate(const BufferStoreNode* n, const Stmt& self) override {
    if (n->buffer.get() == acc_.get()) Stray();
    // A shared cache's fill is spread over the block's threads later
    // (lower_shared_caches), not repeated by each lane.
    if (n->buffer->scope != "local" && n->buffer->scope != "shared") {
      Refuse("'" + n->buffer->name + "' is stored beside mma accumulator '" + acc_->name +
             "', in code that every lane of the warp runs: each of the 32 lanes would store it");
    }
    return IRMutator::Mutate(n, self);
  }

  Stmt Mutate(const AtomicAddNode* n, const Stmt& self) override {
    Refuse("an atomic add into '" + n->target->as<BufferLoadNode>()->buffer->name + "' sits beside mma accumulator '" +
           acc_->name + "', in code that every lane of the warp runs: each of the 32 lanes would add");
  }

 private:
  [[noreturn]] void Stray() const {
    Refuse("mma accumulator '" + acc_->name + "' is accessed outside its mmas and outside a loop nest that walks it "
           "element by element (loops from 0 whose variables index its two dimensions, each element once); a "
           "lane holds only its fragment of it");
  }

  // index / align, where index is a multiple of align.
  Expr Aligned(const Expr& index, int64_t align, const char* what) const {
    const std::optional<LinearForm> form = AsLinear(index);
    bool ok = form && form->constant % align == 0;
    if (form) {
      for (const auto& [var, coefficient] : form->coefficients) ok &= coefficient % align == 0;
    }
    if (!ok) {
      Refuse("an mma's tile of accumulator '" + acc_->name + "' starts at " + what +
             " index that is not a multiple of " + std::to_string(align) + "; tiles are 16 x 8, aligned");
    }
    return FloorDiv(index, align);
  }

  // The nest becomes a loop over this lane's slots; each loop variable is
  // its digit of the slot's element.
  Stmt LanesSlots(const TileWalk& walk) const {
    const Var slot = MakeVar("slot", DataType::kInt32);
    const Expr tile = FloorDiv(slot, kSlots), e = FloorMod(slot, kSlots);
    const int64_t tiles_across = cols_ / 8;
    // The PTX layout: lane 4 g + q holds rows g, g + 8 and columns 2q, 2q + 1.
    const Expr row =
        Add(Add(Mul(FloorDiv(tile, tiles_across), Int(16)), FloorDiv(lane_, 4)), Mul(FloorDiv(e, 2), Int(8)));
    const Expr col =
        Add(Add(Mul(FloorMod(tile, tiles_across), Int(8)), Mul(FloorMod(lane_, 4), Int(2))), FloorMod(e, 2));
    const Expr element[2] = {row, col};
    VarMap digits;
    for (int d = 0; d < 2; ++d) {
      const std::vector<Digit>& all = walk.digits(d);
      for (size_t t = 0; t < all.size(); ++t) {
        Expr value = all[t].coefficient == 1 ? element[d] : FloorDiv(element[d], all[t].coefficient);
        if (t > 0) value = FloorMod(value, all[t].extent);  // the most significant digit needs no bound
        if (all[t].extent == 1) value = Int(0);
        digits[all[t].var] = Simplify(value);
      }
    }
    Stmt body = SwapAccess(acc_.get(), fragment_, {tile, e}).VisitStmt(walk.body());
    for (size_t t = walk.lets().size(); t-- > 0;) body = MakeLet(walk.lets()[t]->var, walk.lets()[t]->value, body);
    body = Simplify(Substitute(body, digits));  // a one-element loop's digit is 0: no "0 * 8" left
    if (!walk.block().empty()) body = MakeBlock(walk.block(), body);
    return MakeFor(slot, Int(0), Int(rows_ * cols_ / kLanes), ForKind::kUnrolled, body);
  }

  Buffer acc_;
  Buffer fragment_;
  Var lane_;
  int64_t rows_ = 0, cols_ = 0;
};

class LowerFragments : public IRMutator {
 public:
  explicit LowerFragments(const std::set<const BufferNode*>& accumulators) : accumulators_(accumulators) {}

 protected:
  Stmt Mutate(const ForNode* n, const Stmt& self) override {
    if (!IsLaneLoop(n)) return IRMutator::Mutate(n, self);
    ++lane_loops_;
    Stmt out = IRMutator::Mutate(n, self);
    --lane_loops_;
    return out;
  }

  Stmt Mutate(const AllocateNode* n, const Stmt& self) override {
    if (!accumulators_.count(n->buffer.get())) return IRMutator::Mutate(n, self);
    const Buffer& acc = n->buffer;
    CheckShape(acc);
    if (lane_loops_ > 0) {
      Refuse("mma accumulator '" + acc->name + "' is allocated inside a loop bound to threadIdx.x; the warp's lanes "
             "are the mma's own (cache_write it outside the loops bound to threadIdx.x)");
    }
    BufferNode node = *acc;
    const int64_t elements = *AsConstInt(acc->shape[0]) * *AsConstInt(acc->shape[1]);
    node.shape = {Int(elements / (kLanes * kSlots)), Int(kSlots)};
    const Buffer fragment = MakeBuffer(node);
    const Var lane = MakeVar("lane", DataType::kInt32);
    Stmt body = Fragments(acc, fragment, lane).VisitStmt(n->body);
    return MakeFor(lane, Int(0), Int(kLanes), ForKind::kThreadBinding, MakeAllocate(fragment, body), kLaneAxis);
  }

 private:
  static void CheckShape(const Buffer& acc) {
    const int64_t* rows = acc->shape.size() == 2 ? AsConstInt(acc->shape[0]) : nullptr;
    const int64_t* cols = acc->shape.size() == 2 ? AsConstInt(acc->shape[1]) : nullptr;
    if (acc->scope != "local" || !rows || !cols || *rows % 16 != 0 || *cols % 8 != 0) {
      Refuse("mma accumulator '" + acc->name + "' must be a 2-D local buffer whose rows are a multiple of 16 and "
             "columns of 8 (sch.cache_write(loop, buffer, \"local\") around the mma's loops)");
    }
  }

  const std::set<const BufferNode*>& accumulators_;
  int lane_loops_ = 0;
};

// The variable of a loop that runs once is its start: a tile whose grid
// dimension has one block (a split factor equal to the extent) indexes its
// accumulator and operands from 0, where the fragments' alignment and walks
// can read it.
Stmt SingleIterationsAsConstants(const Stmt& s) {
  struct Rewriter : IRMutator {
    Stmt Mutate(const ForNode* n, const Stmt& self) override {
      Stmt body = VisitStmt(n->body);
      const int64_t* extent = AsConstInt(n->extent);
      if (extent && *extent == 1 && AsConstInt(n->min)) body = Substitute(body, {{n->var.get(), n->min}});
      if (body == n->body) return self;
      return MakeFor(n->var, n->min, n->extent, n->for_kind, body, n->thread_tag);
    }
  } rewriter;
  return rewriter.VisitStmt(s);
}

// Every loop bound to threadIdx.x runs the 32 lanes of the mmas' warps: the
// launch takes the largest extent bound to an axis.
void CheckLaneLoops(const Stmt& s) {
  struct Finder : IRVisitor {
    void Visit(const ForNode* n) override {
      const int64_t* extent = AsConstInt(n->extent);
      if (IsLaneLoop(n) && !(extent && *extent == kLanes)) {
        Refuse("loop '" + n->var->name + "' is bound to threadIdx.x with other than 32 lanes in a kernel with "
               "mmas, whose warps take threadIdx.x as their lanes");
      }
      IRVisitor::Visit(n);
    }
  } finder;
  finder.VisitStmt(s);
}

// An mma whose accumulator no allocation turned into a fragment.
void CheckEveryMmaLowered(const Stmt& s) {
  struct Finder : IRVisitor {
    void Visit(const MmaNode* n) override {
      const auto* acc = n->acc->as<BufferLoadNode>();
      if (acc->buffer->scope != "local") {
        Refuse("an mma accumulates into '" + acc->buffer->name + "' (" + acc->buffer->scope + " memory); on cuda its "
               "accumulator is a fragment of a local buffer (sch.cache_write(loop, buffer, \"local\"))");
      }
    }
  } finder;
  finder.VisitStmt(s);
}

}  // namespace

PrimFunc LowerMmaFragments(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kIII) << "lower_mma_fragments expects a stage III function, got " << ToString(f->stage);
  if (!f->body) return f;
  const std::set<const BufferNode*> accumulators = Accumulators(f->body);
  if (accumulators.empty()) return f;
  CheckEveryMmaLowered(f->body);
  Stmt body = LowerFragments(accumulators).VisitStmt(SingleIterationsAsConstants(f->body));
  CheckLaneLoops(body);
  return WithBody(f, body);
}

}  // namespace sparsetir
