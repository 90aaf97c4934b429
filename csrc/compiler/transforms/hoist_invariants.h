// hoist_invariants: loop-invariant index arithmetic moves out of loops, bound
// to a variable once (stage III), so the generated code reads cleanly and
// computes a row's offsets once per row rather than once per element.
//
// Before:  for k_1 in T.vectorized(16):
//              C_local[k_0 * 16 + k_1] = C_local[k_0 * 16 + k_1]
//                  + A[J_indptr[i] + j] * B[J_indices[J_indptr[i] + j], k_0 * 16 + k_1]
// After:   v0 = J_indptr[i] + j
//          v1 = J_indices[v0]
//          for k_1 in T.vectorized(16):
//              C_local[k_0 * 16 + k_1] = C_local[k_0 * 16 + k_1] + A[v0] * B[v1, k_0 * 16 + k_1]
//
// Only integer expressions move. Loads move only out of loops that run at
// least once (a constant, positive extent) and only from buffers the loop does
// not write; nothing moves out of a select, a guard or the right side of a
// logical operator, whose evaluation is conditional.
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc HoistInvariants(const PrimFunc& f);

}  // namespace sparsetir
