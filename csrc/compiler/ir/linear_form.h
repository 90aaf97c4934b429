// An integer index as a sum of variables times constants plus a constant:
// the form split, fuse and cache_write leave indices in, read back by the
// analyses that need the coefficients (merge's row blocks, tensorize's tile
// strides, the mma fragments' element positions).
#pragma once

#include <map>
#include <optional>

#include "ir/expr.h"

namespace sparsetir {

struct LinearForm {
  std::map<const VarNode*, int64_t> coefficients;  // no zero entries
  int64_t constant = 0;

  int64_t CoefficientOf(const VarNode* var) const {
    auto found = coefficients.find(var);
    return found == coefficients.end() ? 0 : found->second;
  }
};

// `e` in linear form, or nullopt when it is anything but +, -, a product with
// a constant, a variable or an integer constant.
std::optional<LinearForm> AsLinear(const Expr& e);

}  // namespace sparsetir
