// Attribute values of T.func_attr / T.sp.iteration_attr: a small typed tree
// (None, bool, int, float, str, list, tuple, ordered dict, expression, lambda).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace sparsetir {

struct AttrValue;
using AttrPtr = std::shared_ptr<const AttrValue>;
using AttrMap = std::vector<std::pair<std::string, AttrPtr>>;  // keeps script order

struct AttrValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict, kExpr, kLambda };
  Kind kind = Kind::kNone;
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;
  std::vector<AttrPtr> items;                 // list, tuple
  std::vector<std::pair<AttrPtr, AttrPtr>> entries;  // dict (keys are attrs too)
  Expr expr;                                  // expression (may mention parameters)
  std::vector<Var> lambda_params;             // lambda params: body in `items` as kExpr
};

// Looks up a string key of an AttrMap; nullptr if absent.
AttrPtr FindAttr(const AttrMap& attrs, const std::string& key);
AttrMap WithAttr(AttrMap attrs, const std::string& key, AttrPtr value);
AttrPtr MakeIntAttr(int64_t value);
AttrPtr MakeBoolAttr(bool value);

}  // namespace sparsetir
