#include "codegen/vector_access.h"

#include <algorithm>
#include <set>

#include "codegen/codegen_c.h"
#include "ir/buffer.h"
#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/substitute.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

constexpr int64_t kFactorCap = int64_t{1} << 20;

int64_t PowerOfTwoFactorOf(int64_t v) {
  if (v == 0) return kFactorCap;
  int64_t f = 1;
  while (f < kFactorCap && v % (2 * f) == 0) f *= 2;
  return f;
}

// Whether a store or load of `b` moves through global or shared memory (a
// local cache is registers: nothing to gain, and no address to align).
bool InMemory(const BufferNode* b) { return b->kind == BufferKind::kMatch || b->scope == "shared"; }

// The loads every iteration of a loop body performs, with what the body
// writes and the variables it defines. Loads under a branch, a select or
// the right side of && / || are left out: hoisting them would read memory
// the loop may never touch.
class BodyFacts : public IRVisitor {
 public:
  std::vector<const BufferLoadNode*> unconditional_loads;
  std::set<const BufferNode*> read, written;
  std::set<const VarNode*> defined;

 protected:
  void Visit(const BufferLoadNode* n) override {
    read.insert(n->buffer.get());
    if (conditional_ == 0) unconditional_loads.push_back(n);
    IRVisitor::Visit(n);
  }
  void Visit(const BufferStoreNode* n) override {
    written.insert(n->buffer.get());
    IRVisitor::Visit(n);
  }
  void Visit(const AtomicAddNode* n) override {
    if (const auto* target = n->target->as<BufferLoadNode>()) written.insert(target->buffer.get());
    IRVisitor::Visit(n);
  }
  void Visit(const MmaNode* n) override {
    if (const auto* acc = n->acc->as<BufferLoadNode>()) written.insert(acc->buffer.get());
    IRVisitor::Visit(n);
  }
  void Visit(const LetNode* n) override {
    defined.insert(n->var.get());
    IRVisitor::Visit(n);
  }
  void Visit(const ForNode* n) override {
    defined.insert(n->var.get());
    IRVisitor::Visit(n);
  }
  void Visit(const IfThenElseNode* n) override {
    VisitExpr(n->cond);
    Conditionally([&] {
      VisitStmt(n->then_case);
      if (n->else_case) VisitStmt(n->else_case);
    });
  }
  void Visit(const SelectNode* n) override {
    VisitExpr(n->cond);
    Conditionally([&] {
      VisitExpr(n->true_value);
      VisitExpr(n->false_value);
    });
  }
  void Visit(const BinaryNode* n) override {
    if (n->op != BinaryOp::kAnd && n->op != BinaryOp::kOr) {
      IRVisitor::Visit(n);
      return;
    }
    VisitExpr(n->a);
    Conditionally([&] { VisitExpr(n->b); });
  }

 private:
  template <typename F>
  void Conditionally(F visit) {
    ++conditional_;
    visit();
    --conditional_;
  }
  int conditional_ = 0;
};

bool UsesAny(const std::vector<Expr>& indices, const std::set<const VarNode*>& vars) {
  for (const Expr& index : indices) {
    for (const VarNode* v : vars) {
      if (Uses(index, v)) return true;
    }
  }
  return false;
}

// Whether lane 0's element of an access with these indices lies at a
// multiple of `elements` from the buffer's start (row-major flattening).
bool FirstElementAligned(const BufferNode* b, const std::vector<Expr>& first, int64_t elements,
                         const VarFactor& var_factor) {
  int64_t stride = 1;  // the known power-of-two factor of the dimension's stride
  for (size_t k = first.size(); k-- > 0;) {
    const int64_t factor = std::min(kFactorCap, KnownPowerOfTwoFactor(first[k], var_factor) * stride);
    if (factor % elements != 0) return false;
    if (k > 0) stride = std::min(kFactorCap, stride * KnownPowerOfTwoFactor(b->shape[k], var_factor));
  }
  return true;
}

// An access of `indices` qualifies for a vector of `lanes` elements.
bool Vectorizable(const BufferNode* b, const std::vector<Expr>& indices, const VarNode* lane, int64_t lanes,
                  const BodyFacts& facts, const VarFactor& var_factor) {
  if (!InMemory(b) || ClassifyLaneAccess(indices, lane) != LaneAccess::kContiguous) return false;
  const std::vector<Expr> first = LaneZero(indices, lane);
  if (UsesAny(first, facts.defined)) return false;
  const int64_t elements = VectorAlignment(b, lanes) / BytesOf(b->dtype);
  return FirstElementAligned(b, first, std::max<int64_t>(elements, 1), var_factor);
}

}  // namespace

LaneAccess ClassifyLaneAccess(const std::vector<Expr>& indices, const VarNode* lane) {
  for (size_t k = 0; k + 1 < indices.size(); ++k) {
    if (Uses(indices[k], lane)) return LaneAccess::kOther;
  }
  if (indices.empty() || !Uses(indices.back(), lane)) return LaneAccess::kInvariant;
  std::vector<Expr> addends;
  Addends(indices.back(), &addends);
  int lanes = 0;
  for (const Expr& a : addends) {
    if (a.get() == lane) {
      ++lanes;
    } else if (Uses(a, lane)) {
      return LaneAccess::kOther;
    }
  }
  return lanes == 1 ? LaneAccess::kContiguous : LaneAccess::kOther;
}

std::vector<Expr> LaneZero(const std::vector<Expr>& indices, const VarNode* lane) {
  std::vector<Expr> base;
  for (const Expr& index : indices) base.push_back(Simplify(Substitute(index, {{lane, IntLike(0, index)}})));
  return base;
}

int64_t KnownPowerOfTwoFactor(const Expr& e, const VarFactor& var_factor) {
  switch (e->kind) {
    case ExprKind::kIntImm: return PowerOfTwoFactorOf(e->as<IntImmNode>()->value);
    case ExprKind::kVar: return std::max<int64_t>(var_factor(e->as<VarNode>()), 1);
    case ExprKind::kCast:
      return IsInteger(e->as<CastNode>()->value->dtype) ? KnownPowerOfTwoFactor(e->as<CastNode>()->value, var_factor)
                                                          : 1;
    case ExprKind::kBinary: {
      const auto* n = e->as<BinaryNode>();
      const int64_t a = KnownPowerOfTwoFactor(n->a, var_factor), b = KnownPowerOfTwoFactor(n->b, var_factor);
      switch (n->op) {
        case BinaryOp::kAdd:
        case BinaryOp::kSub:
        case BinaryOp::kMin:
        case BinaryOp::kMax: return std::min(a, b);
        case BinaryOp::kMul: return std::min(kFactorCap, a * b);
        default: return 1;
      }
    }
    default: return 1;
  }
}

int64_t VectorAlignment(const BufferNode* buffer, int64_t lanes) {
  return std::min(kMaxVectorAlignment, lanes * BytesOf(buffer->dtype));
}

VectorAccesses PlanVectorAccesses(const ForNode* loop, const VarFactor& var_factor) {
  VectorAccesses plan;
  const int64_t* extent = AsConstInt(loop->extent);
  const int64_t* min = AsConstInt(loop->min);
  if (loop->for_kind != ForKind::kVectorized || !extent || !min || *min != 0 || *extent < 2 ||
      (*extent & (*extent - 1)) != 0) {
    return plan;
  }
  plan.lanes = *extent;
  const VarNode* lane = loop->var.get();
  BodyFacts facts;
  facts.VisitStmt(loop->body);
  for (const BufferLoadNode* load : facts.unconditional_loads) {
    const BufferNode* b = load->buffer.get();
    if (facts.written.count(b) || !Vectorizable(b, load->indices, lane, plan.lanes, facts, var_factor)) continue;
    // Loads of the same element (one vector) share it.
    std::vector<Expr> first = LaneZero(load->indices, lane);
    auto same = std::find_if(plan.loads.begin(), plan.loads.end(), [&](const VectorLoad& v) {
      if (v.buffer.get() != b) return false;
      for (size_t k = 0; k < first.size(); ++k) {
        if (!StructuralEqual(v.first[k], first[k])) return false;
      }
      return true;
    });
    if (same != plan.loads.end()) {
      same->uses.push_back(load);
    } else {
      plan.loads.push_back({load->buffer, std::move(first), {load}});
    }
  }
  Stmt body = loop->body;
  while (const auto* block = body->as<BlockNode>()) body = block->body;
  if (const auto* store = body->as<BufferStoreNode>();
      store && !facts.read.count(store->buffer.get()) &&
      Vectorizable(store->buffer.get(), store->indices, lane, plan.lanes, facts, var_factor)) {
    plan.store = VectorStore{store, LaneZero(store->indices, lane)};
  }
  return plan;
}

}  // namespace sparsetir
