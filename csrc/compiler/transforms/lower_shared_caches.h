// lower_shared_caches (stage III, cuda target): a shared cache is filled by
// all the threads of its block together.
//
// sch.cache_read(loop, buffer, "shared") holds what every thread of the block
// reads in one iteration of `loop` (the loops bound to threadIdx around it
// vary over the cache like the loops inside), and fills it with a loop nest
// before the body. Run as written, each thread would copy the whole tile.
// This pass spreads the nest's elements over the block's threads, in row-major
// order so that neighbouring threads copy neighbouring elements (coalesced
// loads): thread t of n copies elements t, t + n, t + 2n, ..., four rounds'
// loads at a time (an unrolled group; a longer fill loops over groups). The code
// generator brackets the fill with __syncthreads: before it, so that no
// thread overwrites a tile another thread still reads from the previous
// iteration; after it, so that no thread reads an element before it is
// written.
//
// Before:  for ty in T.thread_binding(2, thread="threadIdx.y"):
//              for lane in T.thread_binding(32, thread="threadIdx.x"):
//                  for j in T.serial(n):
//                      A_shared = T.alloc_buffer((32, 16), "float16", scope="shared")
//                      for ax0 in T.serial(32):
//                          for ax1 in T.serial(16): A_shared[ax0, ax1] = A[j, ax0, ax1]
//                      ... A_shared[ty * 16 + r, c] ...
// After:          ...
//                      A_shared = T.alloc_buffer((32, 16), "float16", scope="shared")
//                      for group in T.serial(2):
//                          for round in T.unroll(4):
//                              e: T.int32 = group * 256 + round * 64 + (lane + ty * 32)
//                              A_shared[e // 16, e % 16] = A[j, e // 16, e % 16]
//                      ... A_shared[ty * 16 + r, c] ...
//
// Refused with a ScheduleError naming the cache: a shared buffer its loop
// writes (cache_write: every thread would need its own part back); a cache
// under a condition or a loop whose bounds depend on the thread (some
// threads would miss the barriers); a cache outside a loop bound to an axis
// of the block's threads, or inside one that does not span the whole axis
// (the block's threads are the fill's; a thread past a loop's extent would
// miss the barriers).
//
// A kernel that writes T.sp.sync_threads() synchronizes its own shared
// buffers (a stage-III script that allocates them and places the barriers):
// the pass leaves its buffers as written and refuses a barrier under a
// condition or a loop whose bounds depend on the thread, or inside a loop
// bound to part of an axis of the block's threads (a thread that skips a
// barrier would leave the others waiting at it).
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc LowerSharedCaches(const PrimFunc& f);

}  // namespace sparsetir
