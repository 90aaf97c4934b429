// cuda/latch, cuda/semaphore and their cuda::std forms (cuda/std/latch,
// cuda/std/semaphore) for hand-written kernels under the SIMT emulator,
// pasted after simt_cuda_scopes.h: cuda::latch<Scope> and cuda::std::latch
// (count_down, try_wait, wait, arrive_and_wait), cuda::counting_semaphore<
// Scope, LeastMax>, cuda::binary_semaphore<Scope> and their cuda::std forms
// (release, acquire, try_acquire), as libcu++ has them.
//
// Both are a count the host's atomics keep, so a latch or a semaphore in
// global memory (a __device__ one, say) works between the blocks that other
// host threads run at the same time, as between the threads of a block. A
// wait is a spin (simt_abi.h): the block's other threads run while it waits,
// and one that can never end fails the launch after the spin limit. The
// timed acquires (try_acquire_for, _until) are not emulated.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtLatch = R"LIBRARY(
namespace cuda {
template <thread_scope Scope> class sparsetir_latch {
 public:
  constexpr explicit sparsetir_latch(ptrdiff_t expected) : count_(expected) {}
  sparsetir_latch(const sparsetir_latch&) = delete;
  sparsetir_latch& operator=(const sparsetir_latch&) = delete;

  static constexpr ptrdiff_t max() { return PTRDIFF_MAX; }

  void count_down(ptrdiff_t update = 1) {
    const ptrdiff_t old = __atomic_fetch_sub(&count_, update, __ATOMIC_RELEASE);
    if (update < 1 || update > old) {
      char why[120];
      snprintf(why, sizeof(why), "cuda::latch::count_down(%td) with %td left to count", update, old);
      sparsetir_trap(why);
    }
  }
  bool try_wait() const { return __atomic_load_n(&count_, __ATOMIC_ACQUIRE) == 0; }
  void wait() const {
    while (!try_wait()) sparsetir_spin("a cuda::latch wait", &count_, sparsetir_strong_look);
  }
  void arrive_and_wait(ptrdiff_t update = 1) {
    count_down(update);
    wait();
  }

 private:
  ptrdiff_t count_;
};

template <thread_scope Scope> class latch : public sparsetir_latch<Scope> {
 public:
  constexpr explicit latch(ptrdiff_t expected) : sparsetir_latch<Scope>(expected) {}
};

namespace std {
class latch : public sparsetir_latch<thread_scope_system> {
 public:
  constexpr explicit latch(ptrdiff_t expected) : sparsetir_latch<thread_scope_system>(expected) {}
};
}  // namespace std
}  // namespace cuda
)LIBRARY";

inline constexpr const char* kSimtSemaphore = R"LIBRARY(
#include <limits.h>
namespace cuda {
template <thread_scope Scope, ptrdiff_t LeastMax> class sparsetir_semaphore {
 public:
  constexpr explicit sparsetir_semaphore(ptrdiff_t desired) : count_(desired) {}
  sparsetir_semaphore(const sparsetir_semaphore&) = delete;
  sparsetir_semaphore& operator=(const sparsetir_semaphore&) = delete;

  // libcu++'s: a binary semaphore's count is 0 or 1, a counting one's any.
  static constexpr ptrdiff_t max() { return LeastMax == 1 ? 1 : PTRDIFF_MAX; }

  void release(ptrdiff_t update = 1) {
    const ptrdiff_t old = __atomic_fetch_add(&count_, update, __ATOMIC_RELEASE);
    if (update < 0 || update > max() - old) {
      char why[160];
      snprintf(why, sizeof(why), "cuda::counting_semaphore::release(%td) with a count of %td, past its max() %td",
               update, old, max());
      sparsetir_trap(why);
    }
  }
  // One unit if there is one: the count is taken down by compare-and-swap,
  // which fails only when another thread took it first.
  bool try_acquire() {
    ptrdiff_t old = __atomic_load_n(&count_, __ATOMIC_RELAXED);
    while (old > 0) {
      if (__atomic_compare_exchange_n(&count_, &old, old - 1, true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return true;
    }
    return false;
  }
  void acquire() {
    while (!try_acquire()) sparsetir_spin("a cuda::counting_semaphore acquire", &count_, sparsetir_strong_look);
  }

 private:
  ptrdiff_t count_;
};

template <thread_scope Scope, ptrdiff_t LeastMax = INT_MAX>
class counting_semaphore : public sparsetir_semaphore<Scope, LeastMax> {
 public:
  constexpr explicit counting_semaphore(ptrdiff_t desired) : sparsetir_semaphore<Scope, LeastMax>(desired) {}
};
template <thread_scope Scope> using binary_semaphore = counting_semaphore<Scope, 1>;

namespace std {
template <ptrdiff_t LeastMax = INT_MAX>
class counting_semaphore : public sparsetir_semaphore<thread_scope_system, LeastMax> {
 public:
  constexpr explicit counting_semaphore(ptrdiff_t desired)
      : sparsetir_semaphore<thread_scope_system, LeastMax>(desired) {}
};
using binary_semaphore = counting_semaphore<1>;
}  // namespace std
}  // namespace cuda
)LIBRARY";

}  // namespace sparsetir
