#include "transforms/hoist_invariants.h"

#include <set>
#include <string>
#include <vector>

#include "ir/equal.h"
#include "ir/functor.h"
#include "ir/substitute.h"

namespace sparsetir {
namespace {

// Variables bound inside a statement (loop and let variables) and buffers it
// stores to.
struct Bindings : IRVisitor {
  std::set<const VarNode*> vars;
  std::set<const BufferNode*> written;
  void Visit(const ForNode* n) override {
    vars.insert(n->var.get());
    IRVisitor::Visit(n);
  }
  void Visit(const LetNode* n) override {
    vars.insert(n->var.get());
    IRVisitor::Visit(n);
  }
  void Visit(const BufferStoreNode* n) override {
    written.insert(n->buffer.get());
    IRVisitor::Visit(n);
  }
  void Visit(const AtomicAddNode* n) override {
    written.insert(n->target->as<BufferLoadNode>()->buffer.get());
    IRVisitor::Visit(n);
  }
};

// Every name in the function, so new variables get unused ones.
struct AllNames : IRVisitor {
  std::set<std::string> names;
  void Visit(const VarNode* n) override { names.insert(n->name); }
  void Visit(const ForNode* n) override {
    names.insert(n->var->name);
    IRVisitor::Visit(n);
  }
  void Visit(const LetNode* n) override {
    names.insert(n->var->name);
    IRVisitor::Visit(n);
  }
};

class NameSupply {
 public:
  explicit NameSupply(std::set<std::string> taken) : taken_(std::move(taken)) {}
  std::string Fresh() {
    std::string name;
    do name = "v" + std::to_string(next_++);
    while (taken_.count(name));
    taken_.insert(name);
    return name;
  }

 private:
  std::set<std::string> taken_;
  int next_ = 0;
};

// Replaces the maximal invariant subexpressions of one loop's body by
// variables (one per distinct expression) and records their definitions.
class Extractor : public IRMutator {
 public:
  Extractor(const Bindings& inside, bool loads_ok, NameSupply* names)
      : inside_(inside), loads_ok_(loads_ok), names_(names) {}

  std::vector<std::pair<Var, Expr>> lets;

  Expr VisitExpr(const Expr& e) override {
    if (!e) return e;
    if (Worthwhile(e) && Invariant(e)) return Bind(e);
    // Conditionally evaluated parts stay where they are.
    if (e->kind == ExprKind::kSelect) return e;
    if (const auto* b = e->as<BinaryNode>(); b && (b->op == BinaryOp::kAnd || b->op == BinaryOp::kOr)) return e;
    return IRMutator::VisitExpr(e);
  }

 protected:
  Stmt Mutate(const IfThenElseNode* n, const Stmt& self) override { return self; }

 private:
  Expr Bind(const Expr& e) {
    for (const auto& [var, value] : lets) {
      if (StructuralEqual(value, e)) return var;
    }
    Var var = MakeVar(names_->Fresh(), e->dtype);
    lets.emplace_back(var, e);
    return var;
  }

  // Integer arithmetic over at least one load or two operations.
  static bool Worthwhile(const Expr& e) {
    if (!IsInteger(e->dtype)) return false;
    if (e->kind != ExprKind::kBinary && e->kind != ExprKind::kBufferLoad && e->kind != ExprKind::kCast) return false;
    struct Count : IRVisitor {
      int loads = 0, ops = 0;
      void Visit(const BufferLoadNode* n) override {
        ++loads;
        IRVisitor::Visit(n);
      }
      void Visit(const BinaryNode* n) override {
        ++ops;
        IRVisitor::Visit(n);
      }
    } count;
    count.VisitExpr(e);
    return count.loads > 0 || count.ops > 1;
  }

  bool Invariant(const Expr& e) const {
    struct Check : IRVisitor {
      const Extractor* self;
      bool ok = true;
      void Visit(const VarNode* n) override { ok &= !self->inside_.vars.count(n); }
      void Visit(const BufferLoadNode* n) override {
        ok &= self->loads_ok_ && !self->inside_.written.count(n->buffer.get());
        IRVisitor::Visit(n);
      }
      void Visit(const CallNode*) override { ok = false; }
      void Visit(const SelectNode*) override { ok = false; }
    } check;
    check.self = this;
    check.VisitExpr(e);
    return check.ok;
  }

  const Bindings& inside_;
  bool loads_ok_;
  NameSupply* names_;
};

// Replaces subexpressions structurally equal to a let's value by its variable.
class Reuse : public IRMutator {
 public:
  explicit Reuse(const std::vector<std::pair<Var, Expr>>& lets, size_t count) : lets_(lets), count_(count) {}
  Expr VisitExpr(const Expr& e) override {
    if (!e) return e;
    for (size_t k = 0; k < count_; ++k) {
      if (StructuralEqual(lets_[k].second, e)) return lets_[k].first;
    }
    return IRMutator::VisitExpr(e);
  }

 private:
  const std::vector<std::pair<Var, Expr>>& lets_;
  size_t count_;
};

// Drops a let whose value became another variable (all of it moved further
// out): its uses name that variable directly.
class TrivialLets : public IRMutator {
 protected:
  Stmt Mutate(const LetNode* n, const Stmt& self) override {
    Stmt result = IRMutator::Mutate(n, self);
    const auto* let = result->as<LetNode>();
    if (let && let->value->kind == ExprKind::kVar) return Substitute(let->body, {{let->var.get(), let->value}});
    return result;
  }
};

class Hoister : public IRMutator {
 public:
  explicit Hoister(NameSupply* names) : names_(names) {}

 protected:
  Stmt Mutate(const ForNode* n, const Stmt& self) override {
    Stmt body = VisitStmt(n->body);  // inner loops first: their lets can move further out
    const int64_t* extent = AsConstInt(n->extent);
    std::vector<std::pair<Var, Expr>> lets;
    // A round can expose more: once `v0 = J_indptr[i] + j` has moved out, a
    // let that read v0 is invariant too. Each round moves at least one let.
    for (int round = 0; round < 8; ++round) {
      Bindings inside;
      inside.vars.insert(n->var.get());
      inside.VisitStmt(body);
      Extractor extractor(inside, extent && *extent > 0, names_);
      body = extractor.VisitStmt(body);
      if (extractor.lets.empty()) break;
      // Later definitions reuse earlier ones (v1 = J_indices[v0], not J_indices[J_indptr[i] + j]).
      std::vector<std::pair<Var, Expr>> all = lets;
      all.insert(all.end(), extractor.lets.begin(), extractor.lets.end());
      for (size_t k = lets.size(); k < all.size(); ++k) all[k].second = Reuse(all, k).VisitExpr(all[k].second);
      lets = std::move(all);
      body = TrivialLets().VisitStmt(body);
    }
    Stmt loop = body == n->body ? self : MakeFor(n->var, n->min, n->extent, n->for_kind, body, n->thread_tag);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) loop = MakeLet(it->first, it->second, loop);
    return loop;
  }

 private:
  NameSupply* names_;
};

}  // namespace

PrimFunc HoistInvariants(const PrimFunc& f) {
  if (!f->body) return f;
  AllNames all;
  all.VisitStmt(f->body);
  for (const Var& p : f->params) all.names.insert(p->name);
  for (const Buffer& b : f->buffers) all.names.insert(b->name);
  NameSupply names(std::move(all.names));
  Stmt body = Hoister(&names).VisitStmt(f->body);
  return body == f->body ? f : WithBody(f, body);
}

}  // namespace sparsetir
