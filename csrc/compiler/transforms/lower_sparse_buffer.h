// lower_sparse_buffer: stage II -> stage III.
//
// Removes iterators and sparse buffers. Each buffer's axes are grouped into
// chains (a root iterator followed by its descendants); a chain is flattened
// into one dimension, fixed root-only chains stay as they are. So only varied
// dimensions are flattened (the design's "flatten only varied dimensions"):
// A over (IO, JO, II, JI) becomes A[nnzb, blk, blk]. Within a chain the offset
// of a position walks down the levels:
//     varied X:            off = X_indptr[off] + pos_X
//     compressed_fixed X:  off = off * length_X + pos_X
//
// Before (stage II):   C[i, k] = C[i, k] + A[i, j] * B[J_indices[i, j], k]
// After (stage III):   C[i, k] = C[i, k] + A[J_indptr[i] + j] * B[J_indices[J_indptr[i] + j], k]
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc LowerSparseBuffer(const PrimFunc& f);

}  // namespace sparsetir
