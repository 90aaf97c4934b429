#include "transforms/lower_sparse_buffer.h"

#include <map>
#include <utility>

#include "ir/functor.h"
#include "support/error.h"
#include "transforms/simplify.h"
#include "transforms/structure_buffers.h"

namespace sparsetir {
namespace {

class BufferFlattener : public IRMutator {
 public:
  // `indptr_of`: the stage-II indptr buffer of every varied iterator.
  BufferFlattener(const PrimFunc& f, std::map<const SparseIteratorNode*, Buffer> indptr_of)
      : func_(f), indptr_of_(std::move(indptr_of)) {}

  // The stage-III twin of a stage-II buffer (made on first use).
  Buffer Flat(const Buffer& b) {
    auto found = flat_.find(b.get());
    if (found != flat_.end()) return found->second;
    BufferNode node;
    node.name = b->name;
    node.kind = b->kind;
    node.data = b->data;
    node.dtype = b->dtype;
    node.scope = b->scope;
    node.span = b->span;
    std::vector<std::vector<SparseIterator>> chains = Chains(b);
    for (size_t c = 0; c < chains.size(); ++c) {
      Expr size = Positions(chains[c].back());
      if (c + 1 == chains.size() && b->extra_storage) size = Add(size, IntLike(b->extra_storage, size));
      node.shape.push_back(Simplify(size));
    }
    Buffer made = MakeBuffer(std::move(node));
    flat_[b.get()] = made;
    order_.push_back(made);
    return made;
  }

  // Buffers in creation order: a buffer sized by another's contents (a ragged
  // level sized by its indptr) comes after it, so the printed form parses.
  const std::vector<Buffer>& InDependencyOrder() const { return order_; }

 protected:
  Expr Mutate(const BufferLoadNode* node, const Expr&) override {
    return MakeLoad(Flat(node->buffer), Flatten(node->buffer, node->indices));
  }
  Stmt Mutate(const BufferStoreNode* node, const Stmt&) override {
    return MakeStore(Flat(node->buffer), Flatten(node->buffer, node->indices), VisitExpr(node->value));
  }
  Stmt Mutate(const AssumeNode* node, const Stmt&) override {
    return MakeAssume(Flat(node->buffer), VisitExpr(node->lo), VisitExpr(node->hi));
  }

 private:
  // Splits the axes into chains: each starts at an axis without a parent.
  static std::vector<std::vector<SparseIterator>> Chains(const Buffer& b) {
    std::vector<std::vector<SparseIterator>> chains;
    for (const SparseIterator& axis : b->axes) {
      if (!axis->parent || chains.empty()) chains.emplace_back();
      chains.back().push_back(axis);
    }
    return chains;
  }

  // Number of positions of a level: the size of its flattened dimension.
  Expr Positions(const SparseIterator& x) {
    if (Expr total = TotalPositions(x)) return total;
    // dense_varied written without nnz: the last offset of its indptr.
    Buffer indptr = IndptrOf(x);
    Expr parent_total = Positions(x->parent);
    return MakeLoad(indptr, {parent_total});
  }

  Buffer IndptrOf(const SparseIterator& x) {
    auto found = indptr_of_.find(x.get());
    ICHECK(found != indptr_of_.end()) << "no indptr buffer for iterator " << x->name;
    return Flat(found->second);
  }

  std::vector<Expr> Flatten(const Buffer& b, const std::vector<Expr>& indices) {
    std::vector<Expr> visited;
    for (const Expr& index : indices) visited.push_back(VisitExpr(index));
    std::vector<Expr> out;
    size_t k = 0;
    for (const auto& chain : Chains(b)) {
      Expr offset = visited[k++];
      for (size_t level = 1; level < chain.size(); ++level, ++k) {
        const SparseIterator& x = chain[level];
        if (IsVaried(x->kind)) {
          Expr start = MakeLoad(IndptrOf(x), {offset});
          Expr pos = visited[k];
          UnifyIntegers(&start, &pos);
          offset = Add(start, pos);
        } else {
          ICHECK(x->kind == IteratorKind::kCompressedFixed) << "level " << x->name << " under a parent";
          offset = Add(Mul(offset, x->length), visited[k]);
        }
      }
      out.push_back(offset);
    }
    return out;
  }

  PrimFunc func_;
  std::map<const BufferNode*, Buffer> flat_;
  std::vector<Buffer> order_;
  std::map<const SparseIteratorNode*, Buffer> indptr_of_;
};

}  // namespace

PrimFunc LowerSparseBuffer(const PrimFunc& f) {
  ICHECK(f->stage == Stage::kII) << "lower_sparse_buffer expects a stage II function, got " << ToString(f->stage);
  // Every varied level is flattened through its indptr buffer. A script
  // written at stage II may leave that buffer out: it is made here as
  // lower_sparse_iter makes it (StructureBuffers reuses declared ones).
  PrimFuncNode with_indptrs = *f;
  StructureBuffers structure(&with_indptrs);
  std::map<const SparseIteratorNode*, Buffer> indptr_of;
  for (const SparseIterator& it : f->iterators) {
    if (IsVaried(it->kind)) indptr_of[it.get()] = structure.Indptr(it);
  }
  const PrimFunc complete = MakePrimFunc(std::move(with_indptrs));
  BufferFlattener flattener(complete, std::move(indptr_of));
  PrimFuncNode out = *complete;
  out.stage = Stage::kIII;
  out.iterators.clear();
  out.buffers.clear();
  for (const Buffer& b : complete->buffers) flattener.Flat(b);
  out.buffers = flattener.InDependencyOrder();
  out.body = complete->body ? flattener.VisitStmt(complete->body) : nullptr;
  return MakePrimFunc(std::move(out));
}

}  // namespace sparsetir
