// A PrimFunc: the unit the compiler works on, at one of three stages.
#pragma once

#include <string>
#include <vector>

#include "ir/attr.h"
#include "ir/buffer.h"
#include "ir/stmt.h"

namespace sparsetir {

// Stage numbers follow the "sparse_tir_level" function attribute of the design:
// 2 = stage I (coordinate space), 1 = stage II (positions), 0 = stage III (flat).
enum class Stage { kI = 2, kII = 1, kIII = 0 };
const char* ToString(Stage stage);

struct PrimFuncNode {
  std::string name;
  std::vector<Var> params;  // dtype kHandle for T.handle, kInt32 / kInt64 for scalars
  AttrMap attrs;            // T.func_attr, minus "sparse_tir_level" (see stage)
  Stage stage = Stage::kI;
  std::vector<SparseIterator> iterators;  // stages I and II, in definition order
  std::vector<Buffer> buffers;            // in definition order
  Stmt body;                              // may be null (a format function: `pass`)
  std::shared_ptr<const SourceFile> source;
};
using PrimFunc = std::shared_ptr<const PrimFuncNode>;

PrimFunc MakePrimFunc(PrimFuncNode node);
// The same function with some fields replaced (passes use this).
PrimFunc WithBody(const PrimFunc& f, Stmt body);

}  // namespace sparsetir
