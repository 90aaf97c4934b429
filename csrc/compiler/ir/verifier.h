// Verifiers. Each throws a ScriptError naming the iteration, iterator or buffer
// and showing the offending line (when the IR came from a script).
#pragma once

#include "ir/function.h"

namespace sparsetir {

// Stage-I rules:
//  - every iterator of an iteration comes after its parent, which must be iterated too;
//  - a buffer is indexed with one index per axis, and a bare iteration variable
//    indexes a compressed axis only if it is that axis's own iterator, with the
//    parent axis indexed by the parent's variable (its iterator tree);
//  - an iteration with a reduction iterator that stores has a T.init() block, and
//    that block uses spatial variables only.
void VerifyStageI(const PrimFunc& f);

// Any stage: every variable is defined before use (parameters, iteration, loop and
// let variables), buffers are indexed with the right number of indices, and
// stage-specific node kinds appear only at their stage.
void VerifyWellFormed(const PrimFunc& f);

}  // namespace sparsetir
