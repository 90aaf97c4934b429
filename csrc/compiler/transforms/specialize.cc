#include "transforms/specialize.h"

#include "ir/functor.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "transforms/simplify.h"

namespace sparsetir {
namespace {

// Substitutes variables and swaps every buffer for its rebuilt twin.
class Rebuilder : public BufferSwapper {
 public:
  Rebuilder(const VarMap& vars, std::map<const BufferNode*, Buffer>& buffers,
            const std::map<const SparseIteratorNode*, SparseIterator>& iterators)
      : vars_(vars), buffers_(buffers), iterators_(iterators) {}

 protected:
  Expr Mutate(const VarNode* node, const Expr& self) override {
    auto found = vars_.find(node);
    return found == vars_.end() ? self : found->second;
  }
  using BufferSwapper::Mutate;
  Stmt Mutate(const SparseIterationNode* node, const Stmt& self) override {
    SparseIterationNode copy = *node;
    for (SparseIterator& it : copy.iterators) it = iterators_.at(it.get());
    copy.init = VisitStmt(node->init);
    copy.body = VisitStmt(node->body);
    return MakeIteration(std::move(copy));
  }
  // A buffer the body allocates (a stage-III script's local array) is
  // rebuilt where it is allocated: its shape may name a specialized scalar.
  Stmt Mutate(const AllocateNode* node, const Stmt& self) override {
    BufferNode copy = *node->buffer;
    for (Expr& dim : copy.shape) dim = dim ? Simplify(VisitExpr(dim)) : dim;
    Buffer made = MakeBuffer(std::move(copy));
    buffers_[node->buffer.get()] = made;
    return MakeAllocate(made, VisitStmt(node->body));
  }
  Buffer Map(const Buffer& b) const override {
    auto found = buffers_.find(b.get());
    ICHECK(found != buffers_.end()) << "buffer " << b->name << " is not declared by the function";
    return found->second;
  }

 private:
  const VarMap& vars_;
  std::map<const BufferNode*, Buffer>& buffers_;
  const std::map<const SparseIteratorNode*, SparseIterator>& iterators_;
};

Expr Sub(const Expr& e, const VarMap& vars) { return e ? Simplify(Substitute(e, vars)) : e; }

}  // namespace

PrimFunc Specialize(const PrimFunc& f, const std::map<std::string, int64_t>& values) {
  VarMap vars;
  auto specialized = std::make_shared<AttrValue>();
  specialized->kind = AttrValue::Kind::kDict;
  if (AttrPtr previous = FindAttr(f->attrs, "specialized")) specialized->entries = previous->entries;
  for (const auto& [name, value] : values) {
    bool again = false;  // the same value twice is harmless; another value is an error
    if (AttrPtr previous = FindAttr(f->attrs, "specialized")) {
      for (const auto& [key, old] : previous->entries) {
        if (key->string_value != name) continue;
        if (old->int_value != value) {
          throw UserError(UserErrorKind::kArgument, "specialize: '" + name + "' is already specialized to " +
                                                        std::to_string(old->int_value) + ", not " + std::to_string(value));
        }
        again = true;
      }
    }
    if (again) continue;
    Var param;
    for (const Var& p : f->params) {
      if (p->name == name) param = p;
    }
    if (!param || param->dtype == DataType::kHandle) {
      std::string scalars;
      for (const Var& p : f->params) {
        if (p->dtype != DataType::kHandle) scalars += (scalars.empty() ? "" : ", ") + p->name;
      }
      throw UserError(UserErrorKind::kArgument, "specialize: '" + name + "' is not a scalar parameter of '" + f->name +
                                                    "' (its scalar parameters: " + scalars + ")");
    }
    if (param->dtype == DataType::kInt32 && (value > INT32_MAX || value < INT32_MIN)) {
      throw UserError(UserErrorKind::kArgument, "specialize: " + name + " = " + std::to_string(value) + " does not fit int32");
    }
    vars[param.get()] = MakeInt(value, param->dtype);
    auto key = std::make_shared<AttrValue>();
    key->kind = AttrValue::Kind::kString;
    key->string_value = name;
    specialized->entries.emplace_back(key, MakeIntAttr(value));
  }
  PrimFuncNode out = *f;
  std::map<const SparseIteratorNode*, SparseIterator> iterators;
  out.iterators.clear();
  for (const SparseIterator& it : f->iterators) {
    SparseIteratorNode copy = *it;
    if (copy.parent) copy.parent = iterators.at(copy.parent.get());
    for (SparseIterator& fused : copy.fused) fused = iterators.at(fused.get());
    copy.extent = Sub(copy.extent, vars);
    copy.nnz = Sub(copy.nnz, vars);
    copy.length = Sub(copy.length, vars);
    SparseIterator made = MakeIterator(std::move(copy));
    iterators[it.get()] = made;
    out.iterators.push_back(made);
  }
  std::map<const BufferNode*, Buffer> buffers;
  // A size may read an earlier buffer (an allocation of J_indptr[m]
  // elements): it must read that buffer's rebuilt twin, which is why buffers
  // are rebuilt in declaration order with the map made so far.
  Rebuilder rebuild(vars, buffers, iterators);
  out.buffers.clear();
  for (const Buffer& b : f->buffers) {
    BufferNode copy = *b;
    for (SparseIterator& axis : copy.axes) axis = iterators.at(axis.get());
    for (Expr& dim : copy.shape) dim = dim ? Simplify(rebuild.VisitExpr(dim)) : dim;
    Buffer made = MakeBuffer(std::move(copy));
    buffers[b.get()] = made;
    out.buffers.push_back(made);
  }
  if (f->body) out.body = rebuild.VisitStmt(f->body);
  out.attrs = WithAttr(out.attrs, "specialized", specialized);
  // A size that became a negative constant can never be called.
  auto check_size = [&](const Expr& e, const std::string& what) {
    if (const int64_t* c = AsConstInt(e); c && *c < 0) {
      std::string given;
      for (const auto& [name, value] : values) given += (given.empty() ? "" : ", ") + name + "=" + std::to_string(value);
      throw UserError(UserErrorKind::kArgument,
                      "specialize: " + given + " makes " + what + " negative (" + std::to_string(*c) + ")");
    }
  };
  for (const SparseIterator& it : out.iterators) {
    check_size(it->extent, "the extent of iterator '" + it->name + "'");
    check_size(it->nnz, "the nnz of iterator '" + it->name + "'");
    check_size(it->length, "the length of iterator '" + it->name + "'");
  }
  for (const Buffer& b : out.buffers) {
    for (const Expr& dim : b->shape) check_size(dim, "a dimension of buffer '" + b->name + "'");
  }
  return Simplify(MakePrimFunc(std::move(out)));
}

std::map<std::string, int64_t> SpecializedValues(const PrimFunc& f) {
  std::map<std::string, int64_t> values;
  if (AttrPtr attr = FindAttr(f->attrs, "specialized")) {
    for (const auto& [key, value] : attr->entries) values[key->string_value] = value->int_value;
  }
  return values;
}

}  // namespace sparsetir
