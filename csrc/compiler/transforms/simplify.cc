#include "transforms/simplify.h"

#include "ir/functor.h"

namespace sparsetir {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

class Simplifier : public IRMutator {
 protected:
  Expr Mutate(const BinaryNode* node, const Expr& self) override {
    Expr a = VisitExpr(node->a), b = VisitExpr(node->b);
    const int64_t* x = AsConstInt(a);
    const int64_t* y = AsConstInt(b);
    bool integer = IsInteger(a->dtype) && a->dtype == b->dtype;
    if (integer && x && y) {
      if (auto folded = Fold(node->op, *x, *y, a->dtype)) return folded;
    }
    if (integer) {
      switch (node->op) {
        case BinaryOp::kAdd:
          if (x && *x == 0) return b;
          if (y && *y == 0) return a;
          // (e + c1) + c2 -> e + (c1 + c2)
          if (y) {
            if (const auto* inner = a->as<BinaryNode>(); inner && inner->op == BinaryOp::kAdd) {
              if (const int64_t* c = AsConstInt(inner->b)) return Add(inner->a, MakeInt(*c + *y, a->dtype));
            }
          }
          break;
        case BinaryOp::kSub:
          if (y && *y == 0) return a;
          break;
        case BinaryOp::kMul:
          if ((x && *x == 0) || (y && *y == 0)) return MakeInt(0, a->dtype);
          if (x && *x == 1) return b;
          if (y && *y == 1) return a;
          break;
        case BinaryOp::kFloorDiv:
        case BinaryOp::kDiv:
          if (y && *y == 1) return a;
          break;
        case BinaryOp::kFloorMod:
          // A level of one slot per parent (a row map) fused with its parent
          // leaves v % 1 in every index; folding it lets codegen see P[v + 1] - P[v].
          if (y && *y == 1) return MakeInt(0, a->dtype);
          break;
        default:
          break;
      }
    }
    if (a == node->a && b == node->b) return self;
    return MakeBinary(node->op, a, b);
  }

  Expr Mutate(const CastNode* node, const Expr& self) override {
    Expr v = VisitExpr(node->value);
    if (const int64_t* c = AsConstInt(v); c && IsInteger(node->dtype) && IsInteger(v->dtype)) {
      return MakeInt(*c, node->dtype);
    }
    if (v == node->value) return self;
    return MakeCast(node->dtype, v);
  }

 private:
  static Expr Fold(BinaryOp op, int64_t x, int64_t y, DataType dtype) {
    switch (op) {
      case BinaryOp::kAdd: return MakeInt(x + y, dtype);
      case BinaryOp::kSub: return MakeInt(x - y, dtype);
      case BinaryOp::kMul: return MakeInt(x * y, dtype);
      case BinaryOp::kFloorDiv: return y ? MakeInt(FloorDiv(x, y), dtype) : nullptr;
      case BinaryOp::kFloorMod: return y ? MakeInt(x - FloorDiv(x, y) * y, dtype) : nullptr;
      case BinaryOp::kMin: return MakeInt(x < y ? x : y, dtype);
      case BinaryOp::kMax: return MakeInt(x > y ? x : y, dtype);
      default: return nullptr;
    }
  }
};

}  // namespace

Expr Simplify(const Expr& e) { return Simplifier().VisitExpr(e); }

Stmt Simplify(const Stmt& s) { return Simplifier().VisitStmt(s); }

PrimFunc Simplify(const PrimFunc& f) {
  if (!f->body) return f;
  Stmt body = Simplifier().VisitStmt(f->body);
  if (body == f->body) return f;
  return WithBody(f, body);
}

}  // namespace sparsetir
