// Sparse iterators (one level of a format) and buffers.
//
// An iterator describes one level: dense or compressed (stores coordinates in
// `indices`) and fixed or varied (per-parent length from `indptr`). Structure
// arrays belong to iterators, so buffers over the same iterators share them.
// A buffer binds a value array to a tuple of iterators (stages I and II) or to a
// dense shape (stage III, after lower_sparse_buffer).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace sparsetir {

enum class IteratorKind {
  kDenseFixed,       // T.sp.dense_fixed(extent)
  kDenseVaried,      // T.sp.dense_varied(parent, extent | (extent, nnz), indptr)
  kCompressedFixed,  // T.sp.compressed_fixed(parent, (extent, length), indices)
  kCompressedVaried, // T.sp.compressed_varied(parent, (extent, nnz), (indptr, indices))
  kFused,            // made by sparse_fuse: one loop over several nested iterators
};
const char* ToString(IteratorKind kind);
inline bool IsVaried(IteratorKind k) {
  return k == IteratorKind::kDenseVaried || k == IteratorKind::kCompressedVaried;
}
inline bool IsCompressed(IteratorKind k) {
  return k == IteratorKind::kCompressedFixed || k == IteratorKind::kCompressedVaried;
}

struct SparseIteratorNode;
using SparseIterator = std::shared_ptr<const SparseIteratorNode>;

struct SparseIteratorNode {
  std::string name;
  IteratorKind kind = IteratorKind::kDenseFixed;
  SparseIterator parent;  // null for dense_fixed (a root)
  Expr extent;            // range of coordinates (the "n" of CSR)
  Expr nnz;               // varied: total positions of this level (may be null for
                          // dense_varied written with an extent alone)
  Expr length;            // compressed_fixed: positions per parent position
  Var indptr;             // varied: handle of the offsets array (parent positions + 1)
  Var indices;            // compressed: handle of the coordinates array
  DataType idtype = DataType::kInt32;
  bool sorted = true;     // compressed coordinates ascending within each fiber
  std::vector<SparseIterator> fused;  // kFused: the iterators it stands for, outer first
  Span span;
};

// Checking factory: parent present iff the kind needs one, handles present iff
// the kind owns them, integer extents.
SparseIterator MakeIterator(SparseIteratorNode node);

// Ancestors from the root down to `it` itself.
std::vector<SparseIterator> AncestorChain(const SparseIterator& it);
// Number of positions of this level over the whole tensor (extent for a root,
// nnz for a varied level, parent positions * length for a fixed child).
// Null when unknown statically (dense_varied without nnz).
Expr TotalPositions(const SparseIterator& it);

enum class BufferKind { kMatch, kAlloc };

struct BufferNode {
  std::string name;
  BufferKind kind = BufferKind::kMatch;
  Var data;                              // kMatch: the bound handle parameter
  std::vector<SparseIterator> axes;      // stages I, II
  std::vector<Expr> shape;               // stage III (flattened)
  DataType dtype = DataType::kFloat32;
  std::string scope = "global";
  int extra_storage = 0;                 // indptr arrays: one more element than positions
  Span span;
};

Buffer MakeBuffer(BufferNode node);

}  // namespace sparsetir
