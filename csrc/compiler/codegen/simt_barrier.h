// cuda/barrier and cuda/std/barrier for hand-written kernels under the SIMT
// emulator, pasted after the emulator header into a source that includes
// either: cuda::barrier (init or a constructor, arrive, wait,
// arrive_and_wait, arrive_and_drop, a completion function), cuda::std::barrier,
// cuda::memcpy_async bound to one and cuda::aligned_size_t (after
// simt_cuda_scopes.h: cuda::thread_scope, and cuda::std::move for the arrival
// tokens).
//
// A barrier counts the arrivals its phase still expects; the arrival that
// completes the phase runs the completion function, resets the count and
// moves the phase on. A thread that waits for a phase yields to the runtime
// (SparsetirSimt::wait_phase) until the phase moves on, so the threads of
// its block keep running and a barrier that can never complete is reported
// as a deadlock. The block's threads are fibers of one host thread, so the
// barrier's fields need no atomics; a barrier shared by several blocks (of
// device scope, in global memory) is not emulated: the blocks run apart.
//
// A copy bound to a barrier is done at once, one of the orders the GPU may
// run it in: its data is there when the phase completes.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtBarrier = R"LIBRARY(
namespace cuda {

struct sparsetir_no_completion {
  void operator()() const {}
};

template <thread_scope Scope, typename Completion = sparsetir_no_completion>
class barrier {
 public:
  class arrival_token {
    friend class barrier;
    uint32_t phase_ = 0;
  };

  // Trivial, as a __shared__ object's must be; init() gives it its count
  // (or the constructor, in storage of the block's: placement new).
  barrier() = default;
  explicit barrier(ptrdiff_t expected, Completion completion = Completion()) { init(this, expected, completion); }
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;

  static constexpr ptrdiff_t max() { return 0x7fffffff; }

  [[nodiscard]] arrival_token arrive(ptrdiff_t update = 1) {
    check_initialized("arrive");
    char why[160];
    if (update < 1 || update > pending_) {
      snprintf(why, sizeof(why), "cuda::barrier::arrive(%td) with %td arrivals left in its phase", update, pending_);
      sparsetir_trap(why);
    }
    arrival_token token;
    token.phase_ = phase_;
    pending_ -= update;
    if (pending_ == 0) {
      completion_();
      pending_ = expected_;
      phase_ = phase_ + 1;
    }
    return token;
  }
  void wait(arrival_token&& token) const {
    if (phase_ == token.phase_) sparsetir_simt->wait_phase(sparsetir_simt->ctx, &phase_, token.phase_);
  }
  void arrive_and_wait() { wait(arrive()); }
  // Expected one arrival fewer, in this phase and the next ones.
  void arrive_and_drop() {
    check_initialized("arrive_and_drop");
    --expected_;
    (void)arrive();
  }

  friend void init(barrier* bar, ptrdiff_t expected, Completion completion = Completion()) {
    if (expected < 0 || expected > barrier::max()) {
      char why[120];
      snprintf(why, sizeof(why), "init(cuda::barrier*, %td): the count must be from 0 to %td", expected,
               barrier::max());
      sparsetir_trap(why);
    }
    bar->expected_ = bar->pending_ = expected;
    bar->phase_ = 0;
    bar->block_ = sparsetir_block_serial;
    bar->completion_ = completion;
  }

 private:
  // Shared memory is not cleared between blocks (here it is thread-local
  // storage the host thread's blocks reuse): a barrier that no thread of
  // this block initialized holds another block's fields, or none.
  void check_initialized(const char* what) const {
    if (block_ != sparsetir_block_serial) {
      char why[120];
      snprintf(why, sizeof(why), "cuda::barrier::%s on a barrier no thread init()ed", what);
      sparsetir_trap(why);
    }
  }

  ptrdiff_t expected_;
  ptrdiff_t pending_;
  volatile uint32_t phase_;
  uint64_t block_;  // sparsetir_block_serial of the block that init()ed it (0: none)
  Completion completion_;
};

namespace std {
// cuda::std::barrier: cuda::barrier of the system's scope, constructed with
// its count (in storage of the block's: placement new).
template <typename Completion = sparsetir_no_completion>
class barrier : public cuda::barrier<thread_scope_system, Completion> {
 public:
  explicit barrier(ptrdiff_t expected, Completion completion = Completion())
      : cuda::barrier<thread_scope_system, Completion>(expected, completion) {}
};
}  // namespace std

template <size_t Alignment> struct aligned_size_t {
  static constexpr size_t align = Alignment;
  size_t value;
  explicit constexpr aligned_size_t(size_t size) : value(size) {}
  constexpr operator size_t() const { return value; }
};

template <size_t Alignment> static inline size_t sparsetir_copy_align(aligned_size_t<Alignment>) { return Alignment; }
static inline size_t sparsetir_copy_align(size_t) { return 1; }

// Thread `rank` of `threads` copies its share of `size` bytes (a lone
// thread all of them), at once; both addresses must have the alignment the
// size promises.
template <typename Size>
static inline void sparsetir_copy_share(void* dst, const void* src, Size size, size_t rank, size_t threads) {
  const size_t align = sparsetir_copy_align(size), bytes = (size_t)size;
  if ((uintptr_t)dst % align != 0 || (uintptr_t)src % align != 0) {
    char why[160];
    snprintf(why, sizeof(why), "cuda::memcpy_async: %p or %p is not aligned to %zu bytes", dst, src, align);
    sparsetir_trap(why);
  }
  const size_t share = (bytes + threads - 1) / threads;
  const size_t begin = ::std::min(bytes, rank * share), end = ::std::min(bytes, (rank + 1) * share);
  if (begin < end) memcpy((char*)dst + begin, (const char*)src + begin, end - begin);
}

// One thread's copy, complete once the barrier's current phase is.
template <typename Size, thread_scope Scope, typename Completion>
static inline void memcpy_async(void* dst, const void* src, Size size, barrier<Scope, Completion>&) {
  sparsetir_copy_share(dst, src, size, 0, 1);
}
// A group's copy: each of its threads copies its share.
template <typename Group, typename Size, thread_scope Scope, typename Completion>
static inline void memcpy_async(const Group& group, void* dst, const void* src, Size size,
                                barrier<Scope, Completion>&) {
  sparsetir_copy_share(dst, src, size, (size_t)group.thread_rank(), (size_t)group.num_threads());
}
}  // namespace cuda
)LIBRARY";

}  // namespace sparsetir
