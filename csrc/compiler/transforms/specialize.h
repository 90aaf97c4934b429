// specialize: binds scalar parameters to constants, everywhere in the function
// (iterators, buffer shapes, loop bounds, indices), then simplifies. The
// parameters stay in the signature, so the calling convention is unchanged; the
// function records {"specialized": {name: value}} and the runtime checks that
// every call passes exactly those values.
//
// Before:  for k in T.serial(feat_size):            (feat_size a parameter)
// After:   st.specialize(f, feat_size=128)
//          for k in T.serial(128):
// Knowing the sizes that matter at JIT time lets the generated code use fixed
// trip counts, full unrolling and register accumulators.
#pragma once

#include <map>
#include <string>

#include "ir/function.h"

namespace sparsetir {

PrimFunc Specialize(const PrimFunc& f, const std::map<std::string, int64_t>& values);

// The values a function was specialized with (empty if none).
std::map<std::string, int64_t> SpecializedValues(const PrimFunc& f);

}  // namespace sparsetir
