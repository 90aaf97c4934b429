#include "ir/expr.h"

#include "ir/buffer.h"
#include "support/error.h"

namespace sparsetir {

const char* ToString(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kDiv: return "/";
    case BinaryOp::kFloorDiv: return "//";
    case BinaryOp::kFloorMod: return "%";
    case BinaryOp::kMin: return "T.min";
    case BinaryOp::kMax: return "T.max";
    case BinaryOp::kEQ: return "==";
    case BinaryOp::kNE: return "!=";
    case BinaryOp::kLT: return "<";
    case BinaryOp::kLE: return "<=";
    case BinaryOp::kGT: return ">";
    case BinaryOp::kGE: return ">=";
    case BinaryOp::kAnd: return "and";
    case BinaryOp::kOr: return "or";
  }
  return "?";
}

bool IsComparison(BinaryOp op) { return op >= BinaryOp::kEQ && op <= BinaryOp::kGE; }
bool IsLogical(BinaryOp op) { return op == BinaryOp::kAnd || op == BinaryOp::kOr; }

const char* ToString(Intrinsic op) {
  switch (op) {
    case Intrinsic::kExp: return "exp";
    case Intrinsic::kLog: return "log";
    case Intrinsic::kSqrt: return "sqrt";
    case Intrinsic::kPow: return "pow";
    case Intrinsic::kAbs: return "abs";
    case Intrinsic::kLowerBound: return "lower_bound";
    case Intrinsic::kLaneSum: return "lane_sum";
    case Intrinsic::kLaneMax: return "lane_max";
    case Intrinsic::kLaneMin: return "lane_min";
    case Intrinsic::kLaneShuffle: return "lane_shuffle";
    case Intrinsic::kHorizontalSum: return "horizontal_sum";
  }
  return "?";
}

Expr MakeInt(int64_t value, DataType dtype) {
  ICHECK(IsInteger(dtype) || dtype == DataType::kBool) << "integer constant of type " << ToString(dtype);
  return std::make_shared<IntImmNode>(dtype, value);
}

Expr MakeFloat(double value, DataType dtype) {
  ICHECK(IsFloat(dtype)) << "float constant of type " << ToString(dtype);
  return std::make_shared<FloatImmNode>(dtype, value);
}

Expr MakeBool(bool value) { return std::make_shared<IntImmNode>(DataType::kBool, value ? 1 : 0); }

Var MakeVar(const std::string& name, DataType dtype) {
  ICHECK(!name.empty()) << "variable without a name";
  return std::make_shared<VarNode>(dtype, name);
}

void Addends(const Expr& e, std::vector<Expr>* out) {
  if (const auto* add = e->as<BinaryNode>(); add && add->op == BinaryOp::kAdd) {
    Addends(add->a, out);
    Addends(add->b, out);
    return;
  }
  out->push_back(e);
}

Expr MakeBinary(BinaryOp op, Expr a, Expr b) {
  ICHECK(a && b) << "null operand of " << ToString(op);
  if (IsInteger(a->dtype) && IsInteger(b->dtype)) UnifyIntegers(&a, &b);
  ICHECK(a->dtype == b->dtype) << "operands of " << ToString(op) << " have types "
                               << ToString(a->dtype) << " and " << ToString(b->dtype);
  DataType result = a->dtype;
  if (IsComparison(op)) {
    result = DataType::kBool;
  } else if (IsLogical(op)) {
    ICHECK(a->dtype == DataType::kBool) << "logical operator on " << ToString(a->dtype);
  } else {
    ICHECK(IsNumeric(a->dtype)) << "arithmetic " << ToString(op) << " on " << ToString(a->dtype);
  }
  return std::make_shared<BinaryNode>(result, op, std::move(a), std::move(b));
}

Expr MakeUnary(UnaryOp op, Expr a) {
  ICHECK(a) << "null operand";
  if (op == UnaryOp::kNot) ICHECK(a->dtype == DataType::kBool) << "'not' on " << ToString(a->dtype);
  if (op == UnaryOp::kNeg) ICHECK(IsNumeric(a->dtype)) << "negation of " << ToString(a->dtype);
  DataType dtype = a->dtype;
  return std::make_shared<UnaryNode>(dtype, op, std::move(a));
}

Expr MakeSelect(Expr cond, Expr true_value, Expr false_value) {
  ICHECK(cond && cond->dtype == DataType::kBool) << "select condition must be bool";
  if (IsInteger(true_value->dtype) && IsInteger(false_value->dtype)) UnifyIntegers(&true_value, &false_value);
  ICHECK(true_value->dtype == false_value->dtype) << "select branches differ in type";
  DataType dtype = true_value->dtype;
  return std::make_shared<SelectNode>(dtype, std::move(cond), std::move(true_value), std::move(false_value));
}

Expr MakeCast(DataType dtype, Expr value) {
  ICHECK(value) << "null cast operand";
  if (value->dtype == dtype) return value;
  return std::make_shared<CastNode>(dtype, std::move(value));
}

Expr MakeCall(Intrinsic op, std::vector<Expr> args, DataType dtype) {
  size_t arity = op == Intrinsic::kPow || IsLaneReduction(op) || op == Intrinsic::kHorizontalSum ? 2
                 : op == Intrinsic::kLaneShuffle              ? 3
                 : op == Intrinsic::kLowerBound               ? 4
                                                              : 1;
  ICHECK(args.size() == arity) << ToString(op) << " takes " << arity << " arguments";
  for (const Expr& arg : args) ICHECK(arg) << "null argument of " << ToString(op);
  return std::make_shared<CallNode>(dtype, op, std::move(args));
}

Expr MakeLoad(Buffer buffer, std::vector<Expr> indices) {
  ICHECK(buffer) << "load from null buffer";
  for (const Expr& index : indices) {
    ICHECK(index && IsInteger(index->dtype)) << "non-integer index into " << buffer->name;
  }
  DataType dtype = buffer->dtype;
  return std::make_shared<BufferLoadNode>(dtype, std::move(buffer), std::move(indices));
}

Expr IntLike(int64_t value, const Expr& like) {
  return MakeInt(value, like && like->dtype == DataType::kInt64 ? DataType::kInt64 : DataType::kInt32);
}

void UnifyIntegers(Expr* a, Expr* b) {
  if ((*a)->dtype == (*b)->dtype) return;
  if ((*a)->dtype == DataType::kInt32) {
    *a = MakeCast(DataType::kInt64, *a);
  } else {
    *b = MakeCast(DataType::kInt64, *b);
  }
}

const int64_t* AsConstInt(const Expr& e) {
  if (!e) return nullptr;
  if (const auto* imm = e->as<IntImmNode>()) return &imm->value;
  return nullptr;
}

}  // namespace sparsetir
