#include "ir/verifier.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/functor.h"
#include "support/error.h"

namespace sparsetir {
namespace {

// Best span for a message: the node's own, else the enclosing statement's.
const Span& Pick(const Span& preferred, const Span& fallback) { return preferred.defined() ? preferred : fallback; }

class StageIVerifier : public IRVisitor {
 public:
  void VisitIteration(const SparseIterationNode* it) {
    iteration_ = it;
    var_index_.clear();
    for (size_t t = 0; t < it->vars.size(); ++t) var_index_[it->vars[t].get()] = t;
    const std::string where = "iteration '" + it->name + "'";
    for (size_t t = 0; t < it->iterators.size(); ++t) {
      const SparseIterator& x = it->iterators[t];
      if (!x->parent) continue;
      auto parent = std::find(it->iterators.begin(), it->iterators.end(), x->parent);
      if (parent == it->iterators.end()) {
        ThrowScriptError(where + ": iterator '" + x->name + "' needs its parent '" + x->parent->name +
                             "' in the same iteration",
                         it->span);
      }
      if (parent - it->iterators.begin() > static_cast<long>(t)) {
        ThrowScriptError(where + ": iterator '" + x->name + "' comes before its parent '" + x->parent->name +
                             "'; a child iterator must follow its parent",
                         it->span);
      }
    }
    bool reduces = it->roles.find('R') != std::string::npos;
    // {"accumulate": True}: the iteration adds into an output initialized
    // before it (a composable format's share of a result).
    AttrPtr accumulate = FindAttr(it->attrs, "accumulate");
    bool accumulates = accumulate && accumulate->kind == AttrValue::Kind::kBool && accumulate->bool_value;
    if (reduces && !it->init && !accumulates) {
      Buffer output = FirstStored(it->body);
      if (output) {
        std::string reductions;
        for (size_t t = 0; t < it->roles.size(); ++t) {
          if (it->roles[t] == 'R') reductions += (reductions.empty() ? "" : ", ") + it->iterators[t]->name;
        }
        ThrowScriptError(where + " reduces over " + reductions + " into buffer '" + output->name +
                             "' but has no 'with T.init():' block to initialize it (or T.sp.iteration_attr({\"accumulate\": True}) when it adds into an output initialized before)",
                         it->span);
      }
    }
    if (it->init) {
      in_init_ = true;
      VisitStmt(it->init);
      in_init_ = false;
    }
    VisitStmt(it->body);
  }

 protected:
  void Visit(const SparseIterationNode* node) override { VisitIteration(node); }

  void Visit(const VarNode* node) override {
    if (!in_init_ || !iteration_) return;
    auto found = var_index_.find(node);
    if (found != var_index_.end() && iteration_->roles[found->second] == 'R') {
      ThrowScriptError("iteration '" + iteration_->name + "': its T.init() block uses the reduction variable '" +
                           node->name + "'; initialize with spatial variables only",
                       Pick(access_span_, iteration_->span));
    }
  }

  void Visit(const BufferLoadNode* node) override {
    CheckAccess(node->buffer, node->indices, node->span);
    Span outer = access_span_;
    if (node->span.defined()) access_span_ = node->span;
    IRVisitor::Visit(node);
    access_span_ = outer;
  }

  void Visit(const BufferStoreNode* node) override {
    CheckAccess(node->buffer, node->indices, node->span);
    Span outer = access_span_;
    if (node->span.defined()) access_span_ = node->span;
    IRVisitor::Visit(node);
    access_span_ = outer;
  }

 private:
  static Buffer FirstStored(const Stmt& s) {
    struct Finder : IRVisitor {
      Buffer found;
      void Visit(const BufferStoreNode* n) override {
        if (!found) found = n->buffer;
      }
    } finder;
    finder.VisitStmt(s);
    return finder.found;
  }

  // The iterator whose variable `e` is, if `e` is a bare iteration variable.
  SparseIterator IteratorOf(const Expr& e) const {
    if (!iteration_ || !e || e->kind != ExprKind::kVar) return nullptr;
    auto found = var_index_.find(static_cast<const VarNode*>(e.get()));
    return found == var_index_.end() ? nullptr : iteration_->iterators[found->second];
  }

  void CheckAccess(const Buffer& buffer, const std::vector<Expr>& indices, const Span& span) {
    const Span& where = Pick(span, iteration_ ? iteration_->span : span);
    if (indices.size() != buffer->axes.size()) {
      ThrowScriptError("buffer '" + buffer->name + "' has " + std::to_string(buffer->axes.size()) +
                           " dimensions but is indexed with " + std::to_string(indices.size()) + " indices",
                       where);
    }
    for (size_t k = 0; k < indices.size(); ++k) {
      const SparseIterator& axis = buffer->axes[k];
      SparseIterator x = IteratorOf(indices[k]);
      if (!x) continue;  // an expression: located by arithmetic or search when lowered
      const std::string var = indices[k]->as<VarNode>()->name;
      if (x == axis) {
        if (axis->parent && IteratorOf(indices[k - 1]) != axis->parent) {
          ThrowScriptError("buffer '" + buffer->name + "': index '" + var + "' walks iterator '" + axis->name +
                               "', so dimension " + std::to_string(k - 1) + " must be indexed with the variable of its parent '" +
                               axis->parent->name + "'",
                           where);
        }
        continue;
      }
      if (IsCompressed(axis->kind)) {
        auto other = std::find(buffer->axes.begin(), buffer->axes.end(), x);
        if (other != buffer->axes.end()) {
          ThrowScriptError("buffer '" + buffer->name + "': dimension " + std::to_string(k) + " is the compressed iterator '" +
                               axis->name + "' but is indexed with '" + var + "' of iterator '" + x->name +
                               "', which is dimension " + std::to_string(other - buffer->axes.begin()) +
                               "; index the dimensions in the order of the buffer's axes",
                           where);
        }
        // A variable of an iterator outside the buffer's tree is a coordinate:
        // lowering locates it by binary search (reading 0 where it is absent).
      }
    }
  }

  const SparseIterationNode* iteration_ = nullptr;
  std::map<const VarNode*, size_t> var_index_;
  bool in_init_ = false;
  Span access_span_;  // the innermost buffer access being visited, for locating a variable
};

class WellFormedVerifier : public IRVisitor {
 public:
  explicit WellFormedVerifier(const PrimFunc& f) : func_(f) {
    for (const Var& p : f->params) defined_.insert(p.get());
    for (const SparseIterator& it : f->iterators) {
      CheckDefined(it->extent, it->span);
      CheckDefined(it->nnz, it->span);
      CheckDefined(it->length, it->span);
    }
    for (const Buffer& b : f->buffers) {
      for (const Expr& dim : b->shape) CheckDefined(dim, b->span);
      if (f->stage == Stage::kIII && !b->axes.empty()) ThrowInternal(__FILE__, __LINE__, "sparse buffer " + b->name + " at stage III");
    }
  }

 protected:
  void Visit(const VarNode* node) override {
    if (!defined_.count(node)) {
      ThrowInternal(__FILE__, __LINE__, "variable '" + node->name + "' used outside its scope in " + func_->name);
    }
  }
  void Visit(const SparseIterationNode* node) override {
    if (func_->stage != Stage::kI) ThrowInternal(__FILE__, __LINE__, "sparse iteration at " + std::string(ToString(func_->stage)));
    for (const Var& v : node->vars) defined_.insert(v.get());
    IRVisitor::Visit(node);
    for (const Var& v : node->vars) defined_.erase(v.get());
  }
  void Visit(const ForNode* node) override {
    if (func_->stage == Stage::kI) ThrowInternal(__FILE__, __LINE__, "for loop at stage I");
    VisitExpr(node->min);
    VisitExpr(node->extent);
    defined_.insert(node->var.get());
    VisitStmt(node->body);
    defined_.erase(node->var.get());
  }
  void Visit(const LetNode* node) override {
    VisitExpr(node->value);
    defined_.insert(node->var.get());
    VisitStmt(node->body);
    defined_.erase(node->var.get());
  }
  void Visit(const BufferLoadNode* node) override {
    CheckRank(node->buffer, node->indices.size());
    IRVisitor::Visit(node);
  }
  void Visit(const BufferStoreNode* node) override {
    CheckRank(node->buffer, node->indices.size());
    IRVisitor::Visit(node);
  }
  void Visit(const CallNode* node) override {
    // horizontal_sum names its span by the span's first element.
    const auto* first = node->args.empty() ? nullptr : node->args[0]->as<BufferLoadNode>();
    if (node->op == Intrinsic::kHorizontalSum && (!first || first->indices.empty())) {
      ThrowInternal(__FILE__, __LINE__, "horizontal_sum of something other than a buffer element in " + func_->name);
    }
    IRVisitor::Visit(node);
  }

 private:
  void CheckDefined(const Expr& e, const Span&) { if (e) VisitExpr(e); }
  void CheckRank(const Buffer& b, size_t given) {
    size_t rank = func_->stage == Stage::kIII ? b->shape.size() : b->axes.size();
    if (rank != given) {
      ThrowInternal(__FILE__, __LINE__, "buffer " + b->name + " of rank " + std::to_string(rank) + " indexed with " + std::to_string(given));
    }
  }

  PrimFunc func_;
  std::set<const VarNode*> defined_;
};

}  // namespace

void VerifyStageI(const PrimFunc& f) {
  if (f->stage != Stage::kI || !f->body) return;
  StageIVerifier().VisitStmt(f->body);
}

void VerifyWellFormed(const PrimFunc& f) {
  if (!f->body) return;
  WellFormedVerifier(f).VisitStmt(f->body);
}

}  // namespace sparsetir
