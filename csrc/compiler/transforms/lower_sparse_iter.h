// lower_sparse_iter: stage I -> stage II.
//
// Each sparse iteration becomes a loop nest over positions, one loop per
// iterator in the iteration's order. Buffer accesses move from coordinate space
// to position space: an index that is the iterator's own variable becomes its
// loop position; any other index is a coordinate, translated through the
// iterators' `indices` (compressed) or used directly (dense axes). The T.init()
// block lands just before the first reduction loop, inside loops over the
// spatial iterators that follow it. Structure arrays become buffers of their own
// (X_indptr with extra_storage=1, X_indices over a dense twin of X), with
// T.assume_buffer_domain facts for the code that follows.
//
// Before (stage I):
//   with T.sp.iteration([I, J, K], "SRS", "csrmm") as [i, j, k]:
//       with T.init():
//           C[i, k] = 0.0
//       C[i, k] = C[i, k] + A[i, j] * B[j, k]
// After (stage II):
//   for i in T.serial(m):
//       for k in T.serial(feat_size):
//           C[i, k] = T.float32(0.0)
//       for j in T.serial(J_indptr[i + 1] - J_indptr[i]):
//           for k in T.serial(feat_size):
//               C[i, k] = C[i, k] + A[i, j] * B[J_indices[i, j], k]
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc LowerSparseIter(const PrimFunc& f);

}  // namespace sparsetir
