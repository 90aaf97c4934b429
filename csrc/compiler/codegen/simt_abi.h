// The calling convention between the SIMT emulator's runtime in the host
// (runtime/simt_scheduler.h) and an emulated CUDA module: like abi.h, the same
// declarations are compiled into the host and pasted, as text, into every
// emulated source (kSimtAbiText), so the two can never disagree.
//
// The module runs the blocks of a grid; the runtime runs the threads of one
// block as fibers on the calling host thread and owns everything that makes
// threads meet: barriers, the lanes that take part in a warp operation, the
// detection of a deadlock.
#pragma once

#include <stdint.h>

#include "codegen/abi.h"

// clang-format off
#define SPARSETIR_SIMT_DECLS                                                                 \
  /* Thread `thread` (linear in its block) of the block being run. */                        \
  typedef void (*SparsetirSimtThread)(void* closure, int64_t thread);                         \
  typedef struct {                                                                            \
    void* ctx; /* the launch */                                                               \
    /* Runs the `threads` threads of block (x, y, z): main(closure, t) for each t, and   */   \
    /* enter(closure, t) every time t starts or resumes, so that it finds its own        */   \
    /* threadIdx. Returns 0, or nonzero when the block deadlocked or an earlier block    */   \
    /* of the launch failed (the launch keeps the message).                              */   \
    int32_t (*run_block)(void* ctx, int64_t threads, uint32_t x, uint32_t y, uint32_t z,  \
                         SparsetirSimtThread enter, SparsetirSimtThread main, void* closure); \
    /* __syncthreads: waits until every live thread of the block has arrived. */              \
    void (*sync_block)(void* ctx);                                                            \
    /* __syncthreads_count / _and / _or: sync_block, at which each thread passes      */      \
    /* `predicate`; returns how many passed a true one, *threads how many took part.  */      \
    int32_t (*vote_block)(void* ctx, int32_t predicate, int32_t* threads);                    \
    /* __syncwarp(mask): waits until every live lane of `mask` in the caller's warp has */    \
    /* arrived; returns the lanes that took part (the live lanes of the mask).          */    \
    uint32_t (*sync_warp)(void* ctx, uint32_t mask);                                          \
    /* A warp shuffle: sync_warp(mask), at which each lane passes `value`; returns the  */    \
    /* value that thread `src` (a rank in the block) passed, read as the lanes met, so  */    \
    /* one meeting suffices (the caller's own value where src is no thread of the block). */  \
    uint64_t (*shuffle_warp)(void* ctx, uint32_t mask, uint64_t value, int64_t src);          \
    /* A warp vote: sync_warp(mask), at which each lane passes `predicate`; returns the */    \
    /* ballot of the lanes that took part and sets *lanes to those lanes.              */     \
    uint32_t (*vote_warp)(void* ctx, uint32_t mask, int32_t predicate, uint32_t* lanes);      \
    /* __activemask: the lanes of the caller's warp that had not returned when it  */        \
    /* last met.                                                                    */        \
    uint32_t (*live_lanes)(void* ctx);                                                        \
    /* coalesced_threads(): waits until no other warp barrier of the caller's warp  */        \
    /* can open; returns the lanes that wait at the same `site` (a call's address). */        \
    uint32_t (*converge_warp)(void* ctx, uint64_t site);                                      \
    /* A thread trapped (__trap, a failed assert): fails the launch with `message`. */        \
    void (*trap)(void* ctx, const char* message);                                             \
    /* The block's dynamic shared memory: the host thread's buffer, at the same      */       \
    /* address for every launch (at least the launch's dynamic shared bytes).        */       \
    void* (*dynamic_shared)(void* ctx);                                                       \
    /* cuda::barrier's wait: returns once *phase (the barrier's phase, which the   */        \
    /* arrival that completes it moves on) differs from `old`.                      */        \
    void (*wait_phase)(void* ctx, const volatile uint32_t* phase, uint32_t old);              \
    /* A spin point (a failed compare-and-swap, an atomic load, __nanosleep, ...): the */     \
    /* thread may be waiting for a value another thread writes at `address` (null:   */      \
    /* none in particular), so the other threads of its block run first (the module  */      \
    /* calls at one weak look, a load or a fence, in so many). `what` names the      */      \
    /* point in messages. Nonzero: the launch failed, the thread must stop.          */      \
    int32_t (*spin)(void* ctx, const char* what, const void* address);                        \
    /* Threads run as fibers that meet at barriers (1), or one after another (0): a  */       \
    /* kernel that never synchronizes needs no fibers.                              */        \
    int32_t cooperative;                                                                      \
    /* The order of a block's threads, and of the blocks of a host task: 0 forward, */        \
    /* 1 reverse, 2 shuffled (SPARSETIR_EMULATE_ORDER, the race check).             */        \
    int32_t order;                                                                            \
  } SparsetirSimt;
// clang-format on

SPARSETIR_SIMT_DECLS

namespace sparsetir {
inline constexpr const char* kSimtAbiText = SPARSETIR_STRINGIFY(SPARSETIR_SIMT_DECLS);
}  // namespace sparsetir
