// lower_mma_fragments (stage III, cuda target): the accumulator of
// T.sp.mma_sync becomes a fragment spread over a warp's 32 lanes, and the
// code that owns it runs on those lanes.
//
// An mma is an instruction of a whole warp. Its lanes hold the 16 x 8 float32
// accumulator tile four elements each, in the PTX ISA's layout: with
// g = lane / 4 and q = lane % 4, slot e of a lane is element
// (g + 8 (e / 2), 2 q + e % 2). A local accumulator of M x N (M a multiple of
// 16, N of 8; sch.cache_write in local scope) becomes (M N / 128) tiles of 4
// slots per lane, tile t covering rows 16 (t / (N / 8)) and columns
// 8 (t % (N / 8)) onwards. Its allocation is wrapped in a loop of 32 lanes
// bound to threadIdx.x; every loop nest that walks the accumulator element by
// element (its init, and the copies in and out) walks this lane's slots
// instead, its loop variables recovered from the element's row and column.
//
// Before:  C_local = T.alloc_buffer((16, 32), "float16", scope="local")
//          for r in T.serial(16):
//              for c in T.serial(32): C_local[r, c] = T.float16(0)
//          for j in T.serial(n):
//              for t in T.serial(4):
//                  T.sp.mma_sync("m16n8k16", C_local[0, t * 8], A[..], B[..])
//          for r in T.unroll(16):
//              for c in T.vectorized(32): C[.., r, c] = C_local[r, c]
// After:   for lane in T.thread_binding(32, thread="threadIdx.x"):
//              C_local = T.alloc_buffer((4, 4), "float16", scope="local")
//              for s in T.unroll(16): C_local[s // 4, s % 4] = T.float16(0)
//              for j in T.serial(n):
//                  for t in T.serial(4):
//                      T.sp.mma_sync("m16n8k16", C_local[t, 0], A[..], B[..])
//              for s in T.unroll(16):
//                  C[.., row(lane, s), col(lane, s)] = C_local[s // 4, s % 4]
//
// Refused with a ScheduleError naming the buffer: an accumulator that is not
// a local 2-D buffer of such a shape; an access to it outside an mma and a
// nest that covers it element by element (loops from 0 whose variables index
// its two dimensions in mixed radix); a store to memory other than the
// accumulator's or a shared cache's (whose fill the block's threads share,
// lower_shared_caches), or an atomic, beside it (the 32 lanes would each do it); a
// loop bound to threadIdx.x inside it, around it, or elsewhere in the kernel
// with other than 32 lanes.
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc LowerMmaFragments(const PrimFunc& f);

}  // namespace sparsetir
