#include "ir/linear_form.h"

namespace sparsetir {
namespace {

LinearForm Scaled(LinearForm form, int64_t by) {
  for (auto& [var, coefficient] : form.coefficients) coefficient *= by;
  form.constant *= by;
  return form;
}

LinearForm Sum(LinearForm a, const LinearForm& b) {
  for (const auto& [var, coefficient] : b.coefficients) {
    if ((a.coefficients[var] += coefficient) == 0) a.coefficients.erase(var);
  }
  a.constant += b.constant;
  return a;
}

}  // namespace

std::optional<LinearForm> AsLinear(const Expr& e) {
  if (!IsInteger(e->dtype)) return std::nullopt;
  LinearForm out;
  if (const int64_t* c = AsConstInt(e)) {
    out.constant = *c;
    return out;
  }
  if (const auto* v = e->as<VarNode>()) {
    out.coefficients[v] = 1;
    return out;
  }
  if (const auto* cast = e->as<CastNode>()) {  // int32 widened to int64: the same value
    if (IsInteger(cast->value->dtype) && (cast->dtype == DataType::kInt64 || cast->dtype == cast->value->dtype)) {
      return AsLinear(cast->value);
    }
    return std::nullopt;
  }
  const auto* op = e->as<BinaryNode>();
  if (!op) return std::nullopt;
  switch (op->op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub: {
      auto a = AsLinear(op->a), b = AsLinear(op->b);
      if (!a || !b) return std::nullopt;
      return Sum(*a, op->op == BinaryOp::kAdd ? *b : Scaled(*b, -1));
    }
    case BinaryOp::kMul: {
      const int64_t* c = AsConstInt(op->b);
      const Expr& rest = c ? op->a : op->b;
      if (!c) c = AsConstInt(op->a);
      if (!c) return std::nullopt;
      auto form = AsLinear(rest);
      if (!form) return std::nullopt;
      return *c == 0 ? LinearForm() : Scaled(*form, *c);
    }
    default: return std::nullopt;
  }
}

}  // namespace sparsetir
