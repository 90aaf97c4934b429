// lower_lane_reductions (stage III, cuda target): a reduction loop bound to
// threadIdx.x becomes lanes that each accumulate a part, then combine their
// parts with warp shuffles.
//
// sch.bind(k_1, "threadIdx.x") on a loop that reduces into a local buffer (a
// cache_write in local scope) gives each lane a partial result over its
// iterations. Each outermost loop nest (inside the buffer's allocation) that
// holds such a loop keeps the buffer's value aside and starts every element
// from the update's identity; after the nest the lanes' parts are combined
// (T.sp.lane_sum / lane_max / lane_min, which the CUDA backend prints as a
// __shfl_xor_sync butterfly) and joined to the kept value, so that every
// lane holds the whole result before the buffer is read or written back.
//
// Before:  O_local = T.alloc_buffer((1,), "float32", scope="local")
//          O_local[0] = T.float32(0)
//          for k_0 in T.serial(4):
//              for k_1 in T.thread_binding(32, thread="threadIdx.x"):
//                  O_local[0] = O_local[0] + X[i, k_0 * 32 + k_1] * Y[j, k_0 * 32 + k_1]
//          O[v] = O_local[0]
// After:   O_local[0] = T.float32(0)
//          O_local_start: T.float32 = O_local[0]
//          O_local[0] = T.float32(0)
//          for k_0 in T.serial(4): ... (unchanged)
//          O_local[0] = O_local_start + T.sp.lane_sum(O_local[0], 32)
//          O[v] = O_local[0]
//
// A group of more than 32 lanes (up to 1024) is the whole block of threads:
// the backend combines each warp's part with shuffles, then the warps' parts
// through shared memory between two __syncthreads. Every thread of the block
// must reach them, so the block has no threadIdx.y/z threads and the buffer
// is allocated under no loop bound to a thread.
//
// Refused with a ScheduleError naming the loop: lanes that are not a power of
// two of at most 1024; more than 32 lanes in a block with other thread axes,
// or combined under a loop bound to a thread; other loops bound to
// threadIdx.x with another extent (the groups would straddle lanes); a
// reduction into a buffer that is not local (lanes would race on it); an
// update that is not a sum, max or min of the buffer; a read of the buffer
// inside the nest outside its updates (a lane holds only its part there).
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc LowerLaneReductions(const PrimFunc& f);

}  // namespace sparsetir
