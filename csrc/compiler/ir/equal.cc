#include "ir/equal.h"

#include <functional>
#include <map>

#include "ir/functor.h"

namespace sparsetir {
namespace {

// Compares two trees while building a one-to-one map between the variables,
// iterators and buffers of the left side and those of the right side.
class Comparator {
 public:
  bool Func(const PrimFunc& a, const PrimFunc& b) {
    if (a->stage != b->stage || a->params.size() != b->params.size() ||
        a->iterators.size() != b->iterators.size() || a->buffers.size() != b->buffers.size() ||
        a->attrs.size() != b->attrs.size()) {
      return false;
    }
    for (size_t i = 0; i < a->params.size(); ++i) {
      if (!Bind(a->params[i], b->params[i])) return false;
    }
    for (size_t i = 0; i < a->attrs.size(); ++i) {
      if (a->attrs[i].first != b->attrs[i].first || !Attr(a->attrs[i].second, b->attrs[i].second)) return false;
    }
    for (size_t i = 0; i < a->iterators.size(); ++i) {
      if (!Iterator(a->iterators[i], b->iterators[i])) return false;
    }
    for (size_t i = 0; i < a->buffers.size(); ++i) {
      if (!BufferDef(a->buffers[i], b->buffers[i])) return false;
    }
    return S(a->body, b->body);
  }

  bool E(const Expr& a, const Expr& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->dtype != b->dtype) return false;
    switch (a->kind) {
      case ExprKind::kIntImm: return a->as<IntImmNode>()->value == b->as<IntImmNode>()->value;
      case ExprKind::kFloatImm: return a->as<FloatImmNode>()->value == b->as<FloatImmNode>()->value;
      case ExprKind::kVar: {
        auto found = vars_.find(static_cast<const VarNode*>(a.get()));
        return found != vars_.end() ? found->second == b.get() : a == b;
      }
      case ExprKind::kBinary: {
        const auto *x = a->as<BinaryNode>(), *y = b->as<BinaryNode>();
        return x->op == y->op && E(x->a, y->a) && E(x->b, y->b);
      }
      case ExprKind::kUnary: {
        const auto *x = a->as<UnaryNode>(), *y = b->as<UnaryNode>();
        return x->op == y->op && E(x->a, y->a);
      }
      case ExprKind::kSelect: {
        const auto *x = a->as<SelectNode>(), *y = b->as<SelectNode>();
        return E(x->cond, y->cond) && E(x->true_value, y->true_value) && E(x->false_value, y->false_value);
      }
      case ExprKind::kCast: return E(a->as<CastNode>()->value, b->as<CastNode>()->value);
      case ExprKind::kCall: {
        const auto *x = a->as<CallNode>(), *y = b->as<CallNode>();
        return x->op == y->op && Es(x->args, y->args);
      }
      case ExprKind::kBufferLoad: {
        const auto *x = a->as<BufferLoadNode>(), *y = b->as<BufferLoadNode>();
        return SameBuffer(x->buffer, y->buffer) && Es(x->indices, y->indices);
      }
    }
    return false;
  }

 private:
  bool Es(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!E(a[i], b[i])) return false;
    }
    return true;
  }

  bool Bind(const Var& a, const Var& b) {
    if (!a || !b) return a == b;
    if (a->dtype != b->dtype) return false;
    vars_[a.get()] = b.get();
    return true;
  }

  bool Iterator(const SparseIterator& a, const SparseIterator& b) {
    if (a->kind != b->kind || a->idtype != b->idtype || a->sorted != b->sorted) return false;
    if (!SameIterator(a->parent, b->parent) || !E(a->extent, b->extent) || !E(a->nnz, b->nnz) ||
        !E(a->length, b->length) || !E(a->indptr, b->indptr) || !E(a->indices, b->indices)) {
      return false;
    }
    if (a->fused.size() != b->fused.size()) return false;
    for (size_t i = 0; i < a->fused.size(); ++i) {
      if (!SameIterator(a->fused[i], b->fused[i])) return false;
    }
    iterators_[a.get()] = b.get();
    return true;
  }

  bool SameIterator(const SparseIterator& a, const SparseIterator& b) {
    if (!a || !b) return a == b;
    auto found = iterators_.find(a.get());
    return found != iterators_.end() && found->second == b.get();
  }

  bool BufferDef(const Buffer& a, const Buffer& b) {
    if (a->kind != b->kind || a->dtype != b->dtype || a->scope != b->scope || a->extra_storage != b->extra_storage ||
        a->axes.size() != b->axes.size() || !E(a->data, b->data) || !Es(a->shape, b->shape)) {
      return false;
    }
    for (size_t i = 0; i < a->axes.size(); ++i) {
      if (!SameIterator(a->axes[i], b->axes[i])) return false;
    }
    buffers_[a.get()] = b.get();
    return true;
  }

  bool SameBuffer(const Buffer& a, const Buffer& b) {
    auto found = buffers_.find(a.get());
    return found != buffers_.end() ? found->second == b.get() : a == b;
  }

  bool Attr(const AttrPtr& a, const AttrPtr& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->bool_value != b->bool_value || a->int_value != b->int_value ||
        a->float_value != b->float_value || a->string_value != b->string_value ||
        a->items.size() != b->items.size() || a->entries.size() != b->entries.size() ||
        a->lambda_params.size() != b->lambda_params.size()) {
      return false;
    }
    for (size_t i = 0; i < a->lambda_params.size(); ++i) Bind(a->lambda_params[i], b->lambda_params[i]);
    for (size_t i = 0; i < a->items.size(); ++i) {
      if (!Attr(a->items[i], b->items[i])) return false;
    }
    for (size_t i = 0; i < a->entries.size(); ++i) {
      if (!Attr(a->entries[i].first, b->entries[i].first) || !Attr(a->entries[i].second, b->entries[i].second)) return false;
    }
    return E(a->expr, b->expr);
  }

  bool S(const Stmt& a, const Stmt& b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
      case StmtKind::kBufferStore: {
        const auto *x = a->as<BufferStoreNode>(), *y = b->as<BufferStoreNode>();
        return SameBuffer(x->buffer, y->buffer) && Es(x->indices, y->indices) && E(x->value, y->value);
      }
      case StmtKind::kSeq: {
        const auto *x = a->as<SeqNode>(), *y = b->as<SeqNode>();
        if (x->stmts.size() != y->stmts.size()) return false;
        for (size_t i = 0; i < x->stmts.size(); ++i) {
          if (!S(x->stmts[i], y->stmts[i])) return false;
        }
        return true;
      }
      case StmtKind::kSparseIteration: {
        const auto *x = a->as<SparseIterationNode>(), *y = b->as<SparseIterationNode>();
        if (x->name != y->name || x->roles != y->roles || x->iterators.size() != y->iterators.size() ||
            x->attrs.size() != y->attrs.size()) {
          return false;
        }
        for (size_t i = 0; i < x->iterators.size(); ++i) {
          if (!SameIterator(x->iterators[i], y->iterators[i]) || !Bind(x->vars[i], y->vars[i])) return false;
        }
        for (size_t i = 0; i < x->attrs.size(); ++i) {
          if (x->attrs[i].first != y->attrs[i].first || !Attr(x->attrs[i].second, y->attrs[i].second)) return false;
        }
        return S(x->init, y->init) && S(x->body, y->body);
      }
      case StmtKind::kFor: {
        const auto *x = a->as<ForNode>(), *y = b->as<ForNode>();
        return x->for_kind == y->for_kind && x->thread_tag == y->thread_tag && E(x->min, y->min) && E(x->extent, y->extent) && Bind(x->var, y->var) &&
               S(x->body, y->body);
      }
      case StmtKind::kIfThenElse: {
        const auto *x = a->as<IfThenElseNode>(), *y = b->as<IfThenElseNode>();
        return E(x->cond, y->cond) && S(x->then_case, y->then_case) && S(x->else_case, y->else_case);
      }
      case StmtKind::kLet: {
        const auto *x = a->as<LetNode>(), *y = b->as<LetNode>();
        return E(x->value, y->value) && Bind(x->var, y->var) && S(x->body, y->body);
      }
      case StmtKind::kAllocate: {
        const auto *x = a->as<AllocateNode>(), *y = b->as<AllocateNode>();
        return BufferDef(x->buffer, y->buffer) && S(x->body, y->body);
      }
      case StmtKind::kBlock: {
        const auto *x = a->as<BlockNode>(), *y = b->as<BlockNode>();
        return x->name == y->name && S(x->body, y->body);
      }
      case StmtKind::kAssume: {
        const auto *x = a->as<AssumeNode>(), *y = b->as<AssumeNode>();
        return SameBuffer(x->buffer, y->buffer) && E(x->lo, y->lo) && E(x->hi, y->hi);
      }
      case StmtKind::kPrefetch: {
        const auto *x = a->as<PrefetchNode>(), *y = b->as<PrefetchNode>();
        return x->extent == y->extent && x->cache_level == y->cache_level && E(x->address, y->address);
      }
      case StmtKind::kAtomicAdd: {
        const auto *x = a->as<AtomicAddNode>(), *y = b->as<AtomicAddNode>();
        return E(x->target, y->target) && E(x->value, y->value);
      }
      case StmtKind::kBarrier:
        return true;
      case StmtKind::kMma: {
        const auto *x = a->as<MmaNode>(), *y = b->as<MmaNode>();
        bool same = x->shape == y->shape && E(x->acc, y->acc) && E(x->a, y->a) && E(x->b, y->b);
        for (size_t s = 0; s < x->strides.size(); ++s) same = same && E(x->strides[s], y->strides[s]);
        return same;
      }
    }
    return false;
  }

  std::map<const VarNode*, const VarNode*> vars_;
  std::map<const SparseIteratorNode*, const SparseIteratorNode*> iterators_;
  std::map<const BufferNode*, const BufferNode*> buffers_;
};

}  // namespace

bool StructuralEqual(const PrimFunc& a, const PrimFunc& b) { return Comparator().Func(a, b); }
bool StructuralEqual(const Expr& a, const Expr& b) { return Comparator().E(a, b); }

namespace {

// Hashes structure only: a variable, iterator or buffer contributes the order of
// its first appearance, never its name, so alpha-equivalent functions (equal
// under StructuralEqual) hash equally.
class Hasher : public IRVisitor {
 public:
  size_t Func(const PrimFunc& f) {
    Mix(static_cast<size_t>(f->stage));
    for (const Var& p : f->params) VisitExpr(p);
    for (const auto& [key, value] : f->attrs) Mix(std::hash<std::string>()(key));
    for (const SparseIterator& it : f->iterators) Iterator(it);
    for (const Buffer& b : f->buffers) BufferId(b);
    VisitStmt(f->body);
    return hash_;
  }

 protected:
  void VisitExpr(const Expr& e) override {
    if (!e) return Mix(0);
    Mix(static_cast<size_t>(e->kind) * 31 + static_cast<size_t>(e->dtype));
    IRVisitor::VisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    if (!s) return Mix(1);
    Mix(1000 + static_cast<size_t>(s->kind));
    IRVisitor::VisitStmt(s);
  }
  void Visit(const IntImmNode* n) override { Mix(std::hash<int64_t>()(n->value)); }
  void Visit(const FloatImmNode* n) override { Mix(std::hash<double>()(n->value)); }
  void Visit(const VarNode* n) override { Mix(Id(n)); }
  void Visit(const BinaryNode* n) override { Mix(static_cast<size_t>(n->op)); IRVisitor::Visit(n); }
  void Visit(const UnaryNode* n) override { Mix(static_cast<size_t>(n->op)); IRVisitor::Visit(n); }
  void Visit(const CallNode* n) override { Mix(static_cast<size_t>(n->op)); IRVisitor::Visit(n); }
  void Visit(const BufferLoadNode* n) override { BufferId(n->buffer); IRVisitor::Visit(n); }
  void Visit(const BufferStoreNode* n) override { BufferId(n->buffer); IRVisitor::Visit(n); }
  void Visit(const SparseIterationNode* n) override {
    Mix(std::hash<std::string>()(n->name + "/" + n->roles));
    for (const SparseIterator& it : n->iterators) Iterator(it);
    for (const Var& v : n->vars) VisitExpr(v);
    IRVisitor::Visit(n);
  }
  void Visit(const ForNode* n) override {
    Mix(static_cast<size_t>(n->for_kind));
    VisitExpr(n->var);
    IRVisitor::Visit(n);
  }
  void Visit(const LetNode* n) override { VisitExpr(n->var); IRVisitor::Visit(n); }
  void Visit(const BlockNode* n) override { Mix(std::hash<std::string>()(n->name)); IRVisitor::Visit(n); }
  void Visit(const AllocateNode* n) override { BufferId(n->buffer); IRVisitor::Visit(n); }
  void Visit(const AssumeNode* n) override { BufferId(n->buffer); IRVisitor::Visit(n); }
  void Visit(const PrefetchNode* n) override {
    Mix(std::hash<int64_t>()(n->extent));
    Mix(std::hash<int>()(n->cache_level));
    IRVisitor::Visit(n);
  }
  void Visit(const MmaNode* n) override { Mix(std::hash<std::string>()(n->shape)); IRVisitor::Visit(n); }

 private:
  void Mix(size_t v) { hash_ ^= v + 0x9e3779b97f4a7c15ULL + (hash_ << 6) + (hash_ >> 2); }
  size_t Id(const void* p) {
    auto [it, inserted] = ids_.emplace(p, ids_.size());
    return it->second;
  }
  void Iterator(const SparseIterator& it) {
    if (!it) return Mix(2);
    bool first = !ids_.count(it.get());
    Mix(Id(it.get()));
    if (!first) return;
    Mix(static_cast<size_t>(it->kind) * 7 + static_cast<size_t>(it->idtype));
    Iterator(it->parent);
    VisitExpr(it->extent);
    VisitExpr(it->nnz);
    VisitExpr(it->length);
  }
  void BufferId(const Buffer& b) {
    bool first = !ids_.count(b.get());
    Mix(Id(b.get()));
    if (!first) return;
    Mix(static_cast<size_t>(b->dtype));
    for (const SparseIterator& axis : b->axes) Iterator(axis);
    for (const Expr& dim : b->shape) VisitExpr(dim);
  }

  size_t hash_ = 0;
  std::map<const void*, size_t> ids_;
};

}  // namespace

size_t StructuralHash(const PrimFunc& f) { return Hasher().Func(f); }

}  // namespace sparsetir
