#include "transforms/lower_atomic.h"

#include "ir/equal.h"
#include "ir/functor.h"
#include "support/error.h"

namespace sparsetir {
namespace {

bool IsAtomic(const SparseIterationNode* it) {
  AttrPtr a = FindAttr(it->attrs, "atomic");
  return a && a->kind == AttrValue::Kind::kBool && a->bool_value;
}

// The addend v of X[idx] = X[idx] + v or X[idx] = v + X[idx]; null otherwise.
Expr Addend(const BufferStoreNode* store) {
  const auto* sum = store->value->as<BinaryNode>();
  if (!sum || sum->op != BinaryOp::kAdd) return nullptr;
  Expr self = MakeLoad(store->buffer, store->indices);
  if (StructuralEqual(sum->a, self)) return sum->b;
  if (StructuralEqual(sum->b, self)) return sum->a;
  return nullptr;
}

class Atomics : public IRMutator {
 protected:
  Stmt Mutate(const SparseIterationNode* node, const Stmt& self) override {
    if (!IsAtomic(node)) return self;
    if (node->init) {
      ThrowScriptError("iteration '" + node->name + "' is atomic but has a T.init(): an atomic iteration adds into an "
                           "output initialized before it",
                       node->span);
    }
    iteration_ = node;
    SparseIterationNode out = *node;
    out.body = VisitStmt(node->body);
    iteration_ = nullptr;
    return MakeIteration(std::move(out));
  }

  Stmt Mutate(const BufferStoreNode* node, const Stmt& self) override {
    if (!iteration_) return self;
    Expr addend = IsFloat(node->buffer->dtype) ? Addend(node) : nullptr;
    if (!addend) {
      ThrowScriptError("iteration '" + iteration_->name + "' is atomic, but its store into '" + node->buffer->name +
                           "' is not a floating-point accumulation " + node->buffer->name + "[...] = " +
                           node->buffer->name + "[...] + value",
                       node->span.defined() ? node->span : iteration_->span);
    }
    return MakeAtomicAdd(MakeLoad(node->buffer, node->indices), addend);
  }

 private:
  const SparseIterationNode* iteration_ = nullptr;
};

}  // namespace

PrimFunc LowerAtomic(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kI) << "lower_atomic expects a stage I function, got " << ToString(f->stage);
  if (!f->body) return f;
  Stmt body = Atomics().VisitStmt(f->body);
  return body == f->body ? f : WithBody(f, body);
}

}  // namespace sparsetir
