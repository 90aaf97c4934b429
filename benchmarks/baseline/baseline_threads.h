// Threading shared by the hand-written baselines (spmm_*.cc, sddmm_*.cc): an nnz-balanced split of the rows into
// contiguous ranges and a small persistent thread pool. ISA-neutral; each baseline .cc includes it and is built as
// its own shared library, so everything here has internal linkage (one pool per library, never shared by accident
// when two baselines are loaded into one process).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace {

// bounds[t] = first row whose indptr >= t * nnz / threads (binary search), bounds[threads] = m, so trailing empty
// rows still belong to the last range (their output must be written too). Monotone in t: the ranges tile [0, m).
inline void partition_rows(const int32_t* indptr, int64_t m, int threads, int64_t* bounds) {
  const int64_t nnz = indptr[m];
  bounds[0] = 0;
  bounds[threads] = m;
  for (int t = 1; t < threads; ++t) {
    const int64_t target = nnz * t / threads;
    bounds[t] = std::lower_bound(indptr, indptr + m + 1, static_cast<int32_t>(target)) - indptr;
    bounds[t] = std::min(std::max(bounds[t], bounds[t - 1]), m);
  }
}

// run(n, f) calls f(0) on the caller and f(1..n-1) on workers, and returns when all are done. Calls are
// serialized. The pool is never destroyed (workers are detached and park on a condvar), which keeps process exit
// free of ordering problems; a call therefore costs a wake-up, not a thread creation.
class Pool {
 public:
  void run(int n, const std::function<void(int)>& f) {
    std::lock_guard<std::mutex> call_lock(call_mu_);
    if (n <= 1) {
      f(0);
      return;
    }
    {
      std::unique_lock<std::mutex> lk(mu_);
      while (static_cast<int>(workers_) < n - 1) {
        // A new worker starts from the current generation, so it joins the run posted just below.
        std::thread(&Pool::worker_loop, this, static_cast<int>(++workers_), generation_).detach();
      }
      task_ = &f;
      active_ = n;
      pending_ = n - 1;
      ++generation_;
    }
    cv_.notify_all();
    f(0);
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  void worker_loop(int id, uint64_t seen) {
    for (;;) {
      const std::function<void(int)>* task;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return generation_ != seen; });
        seen = generation_;
        if (id >= active_) continue;  // not needed for this run (an earlier run used more threads)
        task = task_;
      }
      (*task)(id);
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (--pending_ == 0) done_cv_.notify_one();
      }
    }
  }

  std::mutex call_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  unsigned workers_ = 0;
  uint64_t generation_ = 0;
  int active_ = 0, pending_ = 0;
  const std::function<void(int)>* task_ = nullptr;
};

inline Pool& pool() {
  static Pool* p = new Pool();  // intentionally leaked, see Pool
  return *p;
}

// Below this many multiply-adds (nnz * K), waking a worker (~tens of microseconds) costs more than it saves.
constexpr int64_t kMinParallelWork = int64_t{1} << 20;

// Calls rows(row_begin, row_end) over nnz-balanced contiguous row ranges, on up to num_threads threads.
template <class RowsFn>
void for_row_ranges(const int32_t* indptr, int64_t m, int64_t K, int num_threads, RowsFn rows) {
  if (m == 0) return;
  int threads = std::max(1, num_threads);
  if (int64_t{indptr[m]} * K < kMinParallelWork || m < threads) threads = 1;
  if (threads == 1) {
    rows(int64_t{0}, m);
    return;
  }
  std::vector<int64_t> bounds(threads + 1);
  partition_rows(indptr, m, threads, bounds.data());
  pool().run(threads, [&](int t) { rows(bounds[t], bounds[t + 1]); });
}

}  // namespace
