// simplify: integer constant folding and algebraic identities, so generated code
// reads cleanly (x + 0, x * 1, 0 * x on integers; constant casts; nested
// constant additions such as (i + 1) + 2).
//
// Before:  A[J_indptr[i + 0] * 1 + j]
// After:   A[J_indptr[i] + j]
#pragma once

#include "ir/function.h"

namespace sparsetir {

Expr Simplify(const Expr& e);
Stmt Simplify(const Stmt& s);
PrimFunc Simplify(const PrimFunc& f);

}  // namespace sparsetir
