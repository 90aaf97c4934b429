// Replaces variables by expressions (loop transformations rewrite a loop
// variable in terms of new ones).
#pragma once

#include <map>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace sparsetir {

using VarMap = std::map<const VarNode*, Expr>;

Expr Substitute(const Expr& e, const VarMap& map);
Stmt Substitute(const Stmt& s, const VarMap& map);
// True if `e` (or `s`) mentions `var`.
bool Uses(const Expr& e, const VarNode* var);
bool Uses(const Stmt& s, const VarNode* var);

}  // namespace sparsetir
