// The SIMT emulator's runtime (the host side of codegen/simt_abi.h): the
// threads of a block as fibers (support/fiber.h) on the host thread that runs
// the block, with CUDA's meeting points:
//  - __syncthreads waits for every live (not yet returned) thread of the block;
//  - __syncwarp(mask), and the warp operations built on it, wait for the live
//    lanes of the mask in the caller's warp of 32 consecutive threads;
//  - a cuda::barrier's wait waits until the barrier's phase moves on, which
//    the arrival that completes the phase does (any thread of the block);
//  - a spin point (a failed compare-and-swap, an atomic load, __nanosleep:
//    simt_abi.h) lets the other threads of the block run before its thread
//    goes on, as it may wait for one of their writes;
//  - when no thread can run and no barrier can open, the block deadlocked:
//    the launch fails with the kernel, the block and what each thread waits at;
//    when its threads spin with no progress past a limit, likewise.
// A warp's lanes run until they wait or return, in the launch's order
// (forward, reverse or shuffled: the race check), its warp barriers whose
// lanes have all arrived open, and so on until no lane of the warp can run;
// then the next warp (in the same order). A lane that waits hands the turn
// straight to the next lane's fiber. When every warp is done or waits at
// __syncthreads, the block barrier opens. A warp operation (a shuffle, a
// vote) takes one meeting: the runtime reads the values the lanes brought as
// the meeting opens.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "codegen/simt_abi.h"

namespace sparsetir {

// The most dynamic shared memory a block may have: CUDA's largest (227 KiB,
// sm_90).
inline constexpr size_t kSimtMaxSharedBytes = 227 * 1024;

// How long, by default, the threads of a block may spin without progress
// (no thread arriving at a barrier or returning) before the launch fails.
inline constexpr double kSimtSpinSeconds = 10;

enum class SimtOrder : int32_t { kForward = 0, kReverse = 1, kShuffled = 2 };

// The order of this launch: a ScopedSimtOrder's on this thread, else
// SPARSETIR_EMULATE_ORDER's ("reverse", "shuffle"), else forward.
SimtOrder SimtOrderFromEnvironment();
// SPARSETIR_EMULATE_ORDER=check: every emulated launch runs forward, in
// reverse and shuffled, and fails if what it wrote differs
// (runtime/simt_race_check.h).
bool SimtRaceCheckRequested();

// Sets the order of the emulated launches this thread makes while it lives.
class ScopedSimtOrder {
 public:
  explicit ScopedSimtOrder(SimtOrder order);
  ~ScopedSimtOrder();
  ScopedSimtOrder(const ScopedSimtOrder&) = delete;
  ScopedSimtOrder& operator=(const ScopedSimtOrder&) = delete;

 private:
  int previous_;
};

// One launch of an emulated kernel: what its blocks share (the first error,
// the order, the dynamic shared memory size). Thread-safe: the blocks of a
// grid run on several host threads.
class SimtLaunch {
 public:
  SimtLaunch(std::string kernel, bool cooperative, SimtOrder order, size_t dynamic_shared_bytes);
  SimtLaunch(const SimtLaunch&) = delete;
  SimtLaunch& operator=(const SimtLaunch&) = delete;

  const SparsetirSimt* abi() const { return &abi_; }
  // The first failure of any block; empty if none.
  std::string error() const;
  // How many threads the blocks run so far had, all blocks together.
  int64_t threads_run() const { return threads_run_.load(std::memory_order_relaxed); }

 private:
  friend class SimtBlock;
  void Fail(const std::string& message);
  static bool LoneSpin(SimtLaunch* launch, const char* what);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  std::string kernel_;
  size_t dynamic_shared_bytes_;
  // How long a block's threads may spin with no thread arriving anywhere or
  // returning before the launch fails (SPARSETIR_EMULATE_SPIN_SECONDS).
  double spin_seconds_ = kSimtSpinSeconds;
  SparsetirSimt abi_;
  std::atomic<bool> failed_{false};
  std::atomic<int64_t> threads_run_{0};
  mutable std::mutex mu_;
  std::string error_;
};

}  // namespace sparsetir
