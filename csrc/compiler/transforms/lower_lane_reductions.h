// lower_lane_reductions (stage III, cuda target): a reduction loop bound to
// threadIdx.x becomes lanes that each accumulate a part, then combine their
// parts with warp shuffles.
//
// sch.bind(k_1, "threadIdx.x") on a loop that reduces into a local buffer (a
// cache_write in local scope) gives each lane a partial result over its
// iterations. After the statement holding that loop, every element of the
// buffer is combined over the lanes (T.sp.lane_sum / lane_max / lane_min,
// which the CUDA backend prints as a __shfl_xor_sync butterfly), so that every
// lane holds the whole result before the buffer is written back.
//
// Before:  O_local = T.alloc_buffer((1,), "float32", scope="local")
//          O_local[0] = T.float32(0)
//          for k_0 in T.serial(4):
//              for k_1 in T.thread_binding(32, thread="threadIdx.x"):
//                  O_local[0] = O_local[0] + X[i, k_0 * 32 + k_1] * Y[j, k_0 * 32 + k_1]
//          O[v] = O_local[0]
// After:   ... the same, and before the write-back:
//          O_local[0] = T.sp.lane_sum(O_local[0], 32)
//
// Refused with a ScheduleError naming the loop: lanes that are not a power of
// two of at most 32 (a group must lie in one warp); other loops bound to
// threadIdx.x with another extent (the groups would straddle lanes); a
// reduction into a buffer that is not local (lanes would race on it); an
// update that is not a sum, max or min of the buffer; a buffer whose initial
// value is not the update's identity (every lane would count it).
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc LowerLaneReductions(const PrimFunc& f);

}  // namespace sparsetir
