#include "ir/buffer.h"

#include "support/error.h"

namespace sparsetir {

const char* ToString(IteratorKind kind) {
  switch (kind) {
    case IteratorKind::kDenseFixed: return "dense_fixed";
    case IteratorKind::kDenseVaried: return "dense_varied";
    case IteratorKind::kCompressedFixed: return "compressed_fixed";
    case IteratorKind::kCompressedVaried: return "compressed_varied";
    case IteratorKind::kFused: return "fused";
  }
  return "?";
}

SparseIterator MakeIterator(SparseIteratorNode node) {
  ICHECK(!node.name.empty()) << "iterator without a name";
  ICHECK(IsInteger(node.idtype)) << "iterator " << node.name << " index dtype " << ToString(node.idtype);
  if (node.kind == IteratorKind::kFused) {
    ICHECK(node.fused.size() >= 2) << "fused iterator " << node.name << " fuses fewer than two";
    return std::make_shared<const SparseIteratorNode>(std::move(node));
  }
  ICHECK(node.extent && IsInteger(node.extent->dtype)) << "iterator " << node.name << " extent";
  bool needs_parent = node.kind != IteratorKind::kDenseFixed;
  ICHECK(needs_parent == (node.parent != nullptr)) << "iterator " << node.name << " parent";
  ICHECK(IsVaried(node.kind) == (node.indptr != nullptr)) << "iterator " << node.name << " indptr";
  ICHECK(IsCompressed(node.kind) == (node.indices != nullptr)) << "iterator " << node.name << " indices";
  if (node.kind == IteratorKind::kCompressedFixed) ICHECK(node.length) << "compressed_fixed length";
  if (node.kind == IteratorKind::kCompressedVaried) ICHECK(node.nnz) << "compressed_varied nnz";
  return std::make_shared<const SparseIteratorNode>(std::move(node));
}

std::vector<SparseIterator> AncestorChain(const SparseIterator& it) {
  std::vector<SparseIterator> chain;
  for (SparseIterator cur = it; cur; cur = cur->parent) chain.insert(chain.begin(), cur);
  return chain;
}

Expr TotalPositions(const SparseIterator& it) {
  switch (it->kind) {
    case IteratorKind::kDenseFixed: return it->extent;
    case IteratorKind::kDenseVaried:
    case IteratorKind::kCompressedVaried: return it->nnz;
    case IteratorKind::kCompressedFixed: {
      Expr parent_total = TotalPositions(it->parent);
      if (!parent_total) return nullptr;
      return Mul(parent_total, it->length);
    }
    case IteratorKind::kFused: return TotalPositions(it->fused.back());
  }
  return nullptr;
}

Buffer MakeBuffer(BufferNode node) {
  ICHECK(!node.name.empty()) << "buffer without a name";
  ICHECK(node.kind == BufferKind::kAlloc || node.data) << "match buffer " << node.name << " without handle";
  ICHECK(node.dtype != DataType::kHandle && node.dtype != DataType::kVoid) << "buffer dtype";
  return std::make_shared<const BufferNode>(std::move(node));
}

}  // namespace sparsetir
