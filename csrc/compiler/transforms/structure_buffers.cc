#include "transforms/structure_buffers.h"

namespace sparsetir {

StructureBuffers::StructureBuffers(PrimFuncNode* func) : func_(func) {
  for (const SparseIterator& it : func->iterators) {
    for (const Buffer& b : func->buffers) {
      const bool is_structure = (it->indptr && b->data == it->indptr) || (it->indices && b->data == it->indices);
      if (is_structure) by_handle_[b->data.get()] = b;
    }
  }
}

Buffer StructureBuffers::Indptr(const SparseIterator& x) {
  auto found = by_handle_.find(x->indptr.get());
  if (found != by_handle_.end()) return found->second;
  BufferNode b;
  b.name = Unique(x->name + "_indptr");
  b.data = x->indptr;
  b.axes = AncestorChain(x->parent);
  b.dtype = x->idtype;
  b.extra_storage = 1;
  return Add(x->indptr, std::move(b));
}

Buffer StructureBuffers::Indices(const SparseIterator& x) {
  auto found = by_handle_.find(x->indices.get());
  if (found != by_handle_.end()) return found->second;
  BufferNode b;
  b.name = Unique(x->name + "_indices");
  b.data = x->indices;
  b.axes = AncestorChain(x->parent);
  b.axes.push_back(DenseTwin(x));
  b.dtype = x->idtype;
  return Add(x->indices, std::move(b));
}

SparseIterator StructureBuffers::DenseTwin(const SparseIterator& x) {
  if (x->kind != IteratorKind::kCompressedVaried) return x;
  SparseIteratorNode twin;
  twin.name = Unique(x->name + "_dense");
  twin.kind = IteratorKind::kDenseVaried;
  twin.parent = x->parent;
  twin.extent = x->extent;
  twin.nnz = x->nnz;
  twin.indptr = x->indptr;
  twin.idtype = x->idtype;
  SparseIterator made = MakeIterator(std::move(twin));
  func_->iterators.push_back(made);
  return made;
}

Buffer StructureBuffers::Add(const Var& handle, BufferNode node) {
  Buffer made = MakeBuffer(std::move(node));
  func_->buffers.push_back(made);
  by_handle_[handle.get()] = made;
  return made;
}

std::string StructureBuffers::Unique(const std::string& base) const {
  auto taken = [&](const std::string& n) {
    for (const auto& b : func_->buffers) if (b->name == n) return true;
    for (const auto& it : func_->iterators) if (it->name == n) return true;
    for (const auto& p : func_->params) if (p->name == n) return true;
    return false;
  };
  std::string name = base;
  for (int i = 1; taken(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

}  // namespace sparsetir
