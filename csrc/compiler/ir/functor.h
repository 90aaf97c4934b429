// Visitor and mutator over expressions and statements, driven by the kind lists.
// A mutator returns the very same node when nothing below it changed, so "did the
// pass change anything" is a pointer comparison.
#pragma once

#include "ir/expr.h"
#include "ir/stmt.h"

namespace sparsetir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void VisitExpr(const Expr& e);
  virtual void VisitStmt(const Stmt& s);

 protected:
#define SPARSETIR_EXPR_KIND(name) virtual void Visit(const name##Node* node);
#include "ir/expr_kinds.def"
#undef SPARSETIR_EXPR_KIND
#define SPARSETIR_STMT_KIND(name) virtual void Visit(const name##Node* node);
#include "ir/stmt_kinds.def"
#undef SPARSETIR_STMT_KIND
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr VisitExpr(const Expr& e);
  virtual Stmt VisitStmt(const Stmt& s);

 protected:
  // Each receives the node and its owning pointer (to return unchanged).
#define SPARSETIR_EXPR_KIND(name) virtual Expr Mutate(const name##Node* node, const Expr& self);
#include "ir/expr_kinds.def"
#undef SPARSETIR_EXPR_KIND
#define SPARSETIR_STMT_KIND(name) virtual Stmt Mutate(const name##Node* node, const Stmt& self);
#include "ir/stmt_kinds.def"
#undef SPARSETIR_STMT_KIND

  // Mutates each element; sets *changed when any differs.
  std::vector<Expr> VisitExprs(const std::vector<Expr>& exprs, bool* changed);
};

// Gives a rebuilt node the span of the node it replaces (where it has none).
Expr WithSpan(Expr e, const Span& span);
Stmt WithSpan(Stmt s, const Span& span);

}  // namespace sparsetir
