#include "ir/functor.h"

#include "support/error.h"

namespace sparsetir {

void IRVisitor::VisitExpr(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
#define SPARSETIR_EXPR_KIND(name) \
  case ExprKind::k##name:         \
    return Visit(static_cast<const name##Node*>(e.get()));
#include "ir/expr_kinds.def"
#undef SPARSETIR_EXPR_KIND
  }
}

void IRVisitor::VisitStmt(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
#define SPARSETIR_STMT_KIND(name) \
  case StmtKind::k##name:         \
    return Visit(static_cast<const name##Node*>(s.get()));
#include "ir/stmt_kinds.def"
#undef SPARSETIR_STMT_KIND
  }
}

void IRVisitor::Visit(const IntImmNode*) {}
void IRVisitor::Visit(const FloatImmNode*) {}
void IRVisitor::Visit(const VarNode*) {}
void IRVisitor::Visit(const BinaryNode* n) { VisitExpr(n->a); VisitExpr(n->b); }
void IRVisitor::Visit(const UnaryNode* n) { VisitExpr(n->a); }
void IRVisitor::Visit(const SelectNode* n) {
  VisitExpr(n->cond); VisitExpr(n->true_value); VisitExpr(n->false_value);
}
void IRVisitor::Visit(const CastNode* n) { VisitExpr(n->value); }
void IRVisitor::Visit(const CallNode* n) { for (const Expr& a : n->args) VisitExpr(a); }
void IRVisitor::Visit(const BufferLoadNode* n) { for (const Expr& i : n->indices) VisitExpr(i); }
void IRVisitor::Visit(const BufferStoreNode* n) {
  for (const Expr& i : n->indices) VisitExpr(i);
  VisitExpr(n->value);
}
void IRVisitor::Visit(const SeqNode* n) { for (const Stmt& s : n->stmts) VisitStmt(s); }
void IRVisitor::Visit(const SparseIterationNode* n) { VisitStmt(n->init); VisitStmt(n->body); }
void IRVisitor::Visit(const ForNode* n) { VisitExpr(n->min); VisitExpr(n->extent); VisitStmt(n->body); }
void IRVisitor::Visit(const IfThenElseNode* n) {
  VisitExpr(n->cond); VisitStmt(n->then_case); VisitStmt(n->else_case);
}
void IRVisitor::Visit(const LetNode* n) { VisitExpr(n->value); VisitStmt(n->body); }
void IRVisitor::Visit(const AssumeNode* n) { VisitExpr(n->lo); VisitExpr(n->hi); }
void IRVisitor::Visit(const BlockNode* n) { VisitStmt(n->body); }
void IRVisitor::Visit(const PrefetchNode* n) { VisitExpr(n->address); }
void IRVisitor::Visit(const AtomicAddNode* n) { VisitExpr(n->target); VisitExpr(n->value); }
void IRVisitor::Visit(const MmaNode* n) {
  VisitExpr(n->acc);
  VisitExpr(n->a);
  VisitExpr(n->b);
  for (const Expr& stride : n->strides) VisitExpr(stride);
}
void IRVisitor::Visit(const BarrierNode*) {}
void IRVisitor::Visit(const AllocateNode* n) {
  for (const Expr& dim : n->buffer->shape) VisitExpr(dim);
  VisitStmt(n->body);
}

Expr IRMutator::VisitExpr(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
#define SPARSETIR_EXPR_KIND(name) \
  case ExprKind::k##name:         \
    return Mutate(static_cast<const name##Node*>(e.get()), e);
#include "ir/expr_kinds.def"
#undef SPARSETIR_EXPR_KIND
  }
  return e;
}

Stmt IRMutator::VisitStmt(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
#define SPARSETIR_STMT_KIND(name) \
  case StmtKind::k##name:         \
    return Mutate(static_cast<const name##Node*>(s.get()), s);
#include "ir/stmt_kinds.def"
#undef SPARSETIR_STMT_KIND
  }
  return s;
}

std::vector<Expr> IRMutator::VisitExprs(const std::vector<Expr>& exprs, bool* changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const Expr& e : exprs) {
    out.push_back(VisitExpr(e));
    if (out.back() != e) *changed = true;
  }
  return out;
}

Expr WithSpan(Expr e, const Span& span) {
  if (e && !e->span.defined() && span.defined()) const_cast<ExprNode*>(e.get())->span = span;
  return e;
}
Stmt WithSpan(Stmt s, const Span& span) {
  if (s && !s->span.defined() && span.defined()) const_cast<StmtNode*>(s.get())->span = span;
  return s;
}

Expr IRMutator::Mutate(const IntImmNode*, const Expr& self) { return self; }
Expr IRMutator::Mutate(const FloatImmNode*, const Expr& self) { return self; }
Expr IRMutator::Mutate(const VarNode*, const Expr& self) { return self; }
Expr IRMutator::Mutate(const BinaryNode* n, const Expr& self) {
  Expr a = VisitExpr(n->a), b = VisitExpr(n->b);
  if (a == n->a && b == n->b) return self;
  return WithSpan(MakeBinary(n->op, a, b), n->span);
}
Expr IRMutator::Mutate(const UnaryNode* n, const Expr& self) {
  Expr a = VisitExpr(n->a);
  if (a == n->a) return self;
  return WithSpan(MakeUnary(n->op, a), n->span);
}
Expr IRMutator::Mutate(const SelectNode* n, const Expr& self) {
  Expr c = VisitExpr(n->cond), t = VisitExpr(n->true_value), f = VisitExpr(n->false_value);
  if (c == n->cond && t == n->true_value && f == n->false_value) return self;
  return WithSpan(MakeSelect(c, t, f), n->span);
}
Expr IRMutator::Mutate(const CastNode* n, const Expr& self) {
  Expr v = VisitExpr(n->value);
  if (v == n->value) return self;
  return WithSpan(MakeCast(n->dtype, v), n->span);
}
Expr IRMutator::Mutate(const CallNode* n, const Expr& self) {
  bool changed = false;
  std::vector<Expr> args = VisitExprs(n->args, &changed);
  if (!changed) return self;
  return WithSpan(MakeCall(n->op, std::move(args), n->dtype), n->span);
}
Expr IRMutator::Mutate(const BufferLoadNode* n, const Expr& self) {
  bool changed = false;
  std::vector<Expr> indices = VisitExprs(n->indices, &changed);
  if (!changed) return self;
  return WithSpan(MakeLoad(n->buffer, std::move(indices)), n->span);
}

Stmt IRMutator::Mutate(const BufferStoreNode* n, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> indices = VisitExprs(n->indices, &changed);
  Expr value = VisitExpr(n->value);
  if (!changed && value == n->value) return self;
  return WithSpan(MakeStore(n->buffer, std::move(indices), value), n->span);
}
Stmt IRMutator::Mutate(const SeqNode* n, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> stmts;
  for (const Stmt& s : n->stmts) {
    stmts.push_back(VisitStmt(s));
    if (stmts.back() != s) changed = true;
  }
  if (!changed) return self;
  return MakeSeq(std::move(stmts));
}
Stmt IRMutator::Mutate(const SparseIterationNode* n, const Stmt& self) {
  Stmt init = VisitStmt(n->init), body = VisitStmt(n->body);
  if (init == n->init && body == n->body) return self;
  SparseIterationNode copy = *n;
  copy.init = init;
  copy.body = body;
  return MakeIteration(std::move(copy));
}
Stmt IRMutator::Mutate(const ForNode* n, const Stmt& self) {
  Expr min = VisitExpr(n->min), extent = VisitExpr(n->extent);
  Stmt body = VisitStmt(n->body);
  if (min == n->min && extent == n->extent && body == n->body) return self;
  return WithSpan(MakeFor(n->var, min, extent, n->for_kind, body, n->thread_tag), n->span);
}
Stmt IRMutator::Mutate(const IfThenElseNode* n, const Stmt& self) {
  Expr cond = VisitExpr(n->cond);
  Stmt t = VisitStmt(n->then_case), e = VisitStmt(n->else_case);
  if (cond == n->cond && t == n->then_case && e == n->else_case) return self;
  return WithSpan(MakeIf(cond, t, e), n->span);
}
Stmt IRMutator::Mutate(const LetNode* n, const Stmt& self) {
  Expr value = VisitExpr(n->value);
  Stmt body = VisitStmt(n->body);
  if (value == n->value && body == n->body) return self;
  return WithSpan(MakeLet(n->var, value, body), n->span);
}
Stmt IRMutator::Mutate(const AllocateNode* n, const Stmt& self) {
  Stmt body = VisitStmt(n->body);
  if (body == n->body) return self;
  return MakeAllocate(n->buffer, body);
}
Stmt IRMutator::Mutate(const BlockNode* n, const Stmt& self) {
  Stmt body = VisitStmt(n->body);
  if (body == n->body) return self;
  return MakeBlock(n->name, body);
}
Stmt IRMutator::Mutate(const AssumeNode* n, const Stmt& self) {
  Expr lo = VisitExpr(n->lo), hi = VisitExpr(n->hi);
  if (lo == n->lo && hi == n->hi) return self;
  return MakeAssume(n->buffer, lo, hi);
}

Stmt IRMutator::Mutate(const PrefetchNode* n, const Stmt& self) {
  Expr address = VisitExpr(n->address);
  if (address == n->address) return self;
  return MakePrefetch(address, n->extent, n->cache_level);
}

Stmt IRMutator::Mutate(const BarrierNode*, const Stmt& self) { return self; }

Stmt IRMutator::Mutate(const MmaNode* n, const Stmt& self) {
  Expr acc = VisitExpr(n->acc), a = VisitExpr(n->a), b = VisitExpr(n->b);
  std::array<Expr, 4> strides;
  bool same = acc == n->acc && a == n->a && b == n->b;
  for (size_t s = 0; s < strides.size(); ++s) {
    strides[s] = VisitExpr(n->strides[s]);
    same &= strides[s] == n->strides[s];
  }
  if (same) return self;
  return MakeMma(n->shape, acc, a, b, strides);
}

Stmt IRMutator::Mutate(const AtomicAddNode* n, const Stmt& self) {
  Expr target = VisitExpr(n->target), value = VisitExpr(n->value);
  if (target == n->target && value == n->value) return self;
  return MakeAtomicAdd(target, value);
}

}  // namespace sparsetir
