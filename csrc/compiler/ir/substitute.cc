#include "ir/substitute.h"

#include "ir/functor.h"

namespace sparsetir {
namespace {

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}

 protected:
  Expr Mutate(const VarNode* node, const Expr& self) override {
    auto found = map_.find(node);
    return found == map_.end() ? self : found->second;
  }

 private:
  const VarMap& map_;
};

class UseFinder : public IRVisitor {
 public:
  explicit UseFinder(const VarNode* var) : var_(var) {}
  bool found = false;

 protected:
  void Visit(const VarNode* node) override { found |= node == var_; }

 private:
  const VarNode* var_;
};

}  // namespace

Expr Substitute(const Expr& e, const VarMap& map) { return Substituter(map).VisitExpr(e); }
Stmt Substitute(const Stmt& s, const VarMap& map) { return Substituter(map).VisitStmt(s); }

bool Uses(const Expr& e, const VarNode* var) {
  UseFinder finder(var);
  finder.VisitExpr(e);
  return finder.found;
}

bool Uses(const Stmt& s, const VarNode* var) {
  UseFinder finder(var);
  finder.VisitStmt(s);
  return finder.found;
}

std::set<const VarNode*> VarsComputedFrom(const Stmt& body, const VarNode* var) {
  struct Finder : IRVisitor {
    std::set<const VarNode*> vars;
    void Visit(const LetNode* n) override {
      if (UsesAny(n->value, vars)) vars.insert(n->var.get());
      IRVisitor::Visit(n);
    }
  } finder;
  finder.vars.insert(var);
  if (body) finder.VisitStmt(body);
  return finder.vars;
}

bool UsesAny(const Expr& e, const std::set<const VarNode*>& vars) {
  for (const VarNode* v : vars) {
    if (Uses(e, v)) return true;
  }
  return false;
}

bool ReadsBuffer(const Expr& e) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit(const BufferLoadNode*) override { found = true; }
  } finder;
  finder.VisitExpr(e);
  return finder.found;
}

bool HasBarrier(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit(const BarrierNode*) override { found = true; }
  } finder;
  finder.VisitStmt(s);
  return finder.found;
}

Expr BufferSwapper::Mutate(const BufferLoadNode* node, const Expr& self) {
  bool changed = false;
  std::vector<Expr> indices = VisitExprs(node->indices, &changed);
  return MakeLoad(Map(node->buffer), indices);
}

Stmt BufferSwapper::Mutate(const BufferStoreNode* node, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> indices = VisitExprs(node->indices, &changed);
  return MakeStore(Map(node->buffer), indices, VisitExpr(node->value));
}

Stmt BufferSwapper::Mutate(const AssumeNode* node, const Stmt& self) {
  return MakeAssume(Map(node->buffer), VisitExpr(node->lo), VisitExpr(node->hi));
}

}  // namespace sparsetir
