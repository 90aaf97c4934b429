// Structural equality and hashing. Two functions are equal when they have the
// same structure up to a consistent renaming of variables, iterators and buffers
// (alpha-equivalence); spans are ignored. Equal functions hash equally.
#pragma once

#include <cstddef>

#include "ir/function.h"

namespace sparsetir {

bool StructuralEqual(const PrimFunc& a, const PrimFunc& b);
bool StructuralEqual(const Expr& a, const Expr& b);
size_t StructuralHash(const PrimFunc& f);

}  // namespace sparsetir
