// A multi-threaded SparsetirLauncher for the C++ tests (the extension uses
// at::parallel_for): each parallel_for hands chunks of `grain` iterations to
// `threads` std::threads in the order they ask for them, so the split differs
// from run to run and from the serial order, which is what a test of
// determinism needs.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "codegen/abi.h"

namespace sparsetir::testing {

class ThreadLauncher {
 public:
  explicit ThreadLauncher(int32_t threads) : launcher_{this, &ParallelFor, threads} {}
  const SparsetirLauncher* get() const { return &launcher_; }

 private:
  static void ParallelFor(void* ctx, int64_t begin, int64_t end, int64_t grain, SparsetirTask task, void* closure) {
    const int32_t threads = static_cast<ThreadLauncher*>(ctx)->launcher_.num_threads;
    const int64_t step = std::max<int64_t>(1, grain);
    std::atomic<int64_t> next{begin};
    auto work = [&] {
      for (int64_t b = next.fetch_add(step); b < end; b = next.fetch_add(step)) task(closure, b, std::min(end, b + step));
    };
    std::vector<std::thread> pool;
    for (int32_t t = 0; t < threads; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
  }

  SparsetirLauncher launcher_;
};

}  // namespace sparsetir::testing
