// The stage-II buffers of a function's structure arrays: one per indptr /
// indices handle. lower_sparse_iter makes them for every iterator; a script
// written at stage II may declare them itself (J_indptr = T.sp.match_buffer(
// indptr, (I,), "int32", extra_storage=1)) or leave them out, and
// lower_sparse_buffer then makes the ones it needs in the same way, so both
// stages flatten a varied level through the same buffer.
#pragma once

#include <map>
#include <string>

#include "ir/function.h"

namespace sparsetir {

class StructureBuffers {
 public:
  // Buffers already bound to a handle in `func` are reused, not duplicated.
  explicit StructureBuffers(PrimFuncNode* func);

  // X_indptr over the ancestor chain of X's parent, with one extra element.
  Buffer Indptr(const SparseIterator& x);
  // X_indices over the ancestors of X followed by X's dense twin (positions are
  // the same; the twin says the array itself is not searched).
  Buffer Indices(const SparseIterator& x);

 private:
  SparseIterator DenseTwin(const SparseIterator& x);
  Buffer Add(const Var& handle, BufferNode node);
  std::string Unique(const std::string& base) const;

  PrimFuncNode* func_;
  std::map<const VarNode*, Buffer> by_handle_;
};

}  // namespace sparsetir
