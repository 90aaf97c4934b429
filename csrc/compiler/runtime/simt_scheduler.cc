#include "runtime/simt_scheduler.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "support/fiber.h"

namespace sparsetir {
namespace {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kMaxBlockThreads = 1024;  // also the emulator header's lane slots

enum class Where { kRunnable, kBlockBarrier, kWarpBarrier, kReturned };

std::string Hex(uint32_t mask) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(mask >> shift) & 0xf];
  return s;
}

}  // namespace

// The threads of one block, run as fibers on the calling host thread.
class SimtBlock {
 public:
  SimtBlock(SimtLaunch* launch, int64_t threads, const uint32_t index[3], SparsetirSimtThread enter,
            SparsetirSimtThread main, void* closure)
      : launch_(launch), enter_(enter), main_(main), closure_(closure), count_(threads) {
    std::memcpy(index_, index, sizeof(index_));
  }

  // Runs every thread to its end; false (after recording why) on a deadlock.
  bool Run() {
    std::vector<int64_t> order = Order();
    threads_.reserve(static_cast<size_t>(count_));  // fibers point at their Thread: no reallocation
    for (int64_t t = 0; t < count_; ++t) {
      threads_.emplace_back();
      threads_.back().block = this;
      threads_.back().index = t;
      threads_.back().fiber = std::make_unique<Fiber>(&SimtBlock::ThreadMain, &threads_.back());
    }
    SimtBlock* outer = current_;
    current_ = this;
    bool ok = true;
    for (;;) {
      for (int64_t t : order) {
        Thread& thread = threads_[t];
        if (thread.where != Where::kRunnable) continue;
        running_ = t;
        enter_(closure_, t);
        thread.fiber->Resume();
        if (thread.fiber->finished()) thread.where = Where::kReturned;
      }
      if (std::all_of(threads_.begin(), threads_.end(), [](const Thread& t) { return t.where == Where::kReturned; })) {
        break;
      }
      if (!OpenBarriers()) {
        launch_->Fail(Deadlock());
        ok = false;
        break;
      }
    }
    current_ = outer;
    return ok;
  }

  // From a kernel thread (through the ABI): wait at a barrier.
  static uint32_t Wait(Where where, uint32_t mask) {
    SimtBlock* block = current_;
    Thread& me = block->threads_[block->running_];
    me.where = where;
    me.mask = mask | (1u << (me.index % kWarpSize));  // a lane always syncs with itself
    Fiber::Suspend();
    return me.lanes;
  }
  static bool Active() { return current_ != nullptr; }

 private:
  struct Thread {
    SimtBlock* block = nullptr;
    int64_t index = 0;
    std::unique_ptr<Fiber> fiber;
    Where where = Where::kRunnable;
    uint32_t mask = 0;   // at a warp barrier: the lanes it waits for
    uint32_t lanes = 0;  // when released from it: the lanes that took part
  };

  static void ThreadMain(void* arg) {
    Thread* thread = static_cast<Thread*>(arg);
    thread->block->main_(thread->block->closure_, thread->index);
  }

  std::vector<int64_t> Order() const {
    std::vector<int64_t> order(static_cast<size_t>(count_));
    std::iota(order.begin(), order.end(), 0);
    switch (launch_->abi_.order) {
      case static_cast<int32_t>(SimtOrder::kReverse):
        std::reverse(order.begin(), order.end());
        break;
      case static_cast<int32_t>(SimtOrder::kShuffled): {
        // Seeded by the block, so that a reported race reproduces.
        std::mt19937_64 rng(0x9e3779b97f4a7c15ull ^ (index_[0] + (uint64_t{index_[1]} << 21) +
                                                      (uint64_t{index_[2]} << 42)));
        std::shuffle(order.begin(), order.end(), rng);
        break;
      }
      default:
        break;
    }
    return order;
  }

  // Releases the threads of every barrier whose threads have all arrived;
  // false if none could be released (a deadlock).
  bool OpenBarriers() {
    bool opened = false;
    const bool all_at_block = std::all_of(threads_.begin(), threads_.end(), [](const Thread& t) {
      return t.where == Where::kBlockBarrier || t.where == Where::kReturned;
    });
    if (all_at_block) {
      for (Thread& t : threads_) {
        if (t.where == Where::kBlockBarrier) t.where = Where::kRunnable, opened = true;
      }
      return opened;
    }
    for (int64_t first = 0; first < count_; first += kWarpSize) {
      const int64_t end = std::min(first + kWarpSize, count_);
      uint32_t live = 0, waiting = 0;
      for (int64_t t = first; t < end; ++t) {
        const uint32_t bit = 1u << (t - first);
        if (threads_[t].where != Where::kReturned) live |= bit;
        if (threads_[t].where == Where::kWarpBarrier) waiting |= bit;
      }
      // Decided for every lane before any is released: a released lane no
      // longer counts as waiting.
      uint32_t released = 0;
      for (int64_t t = first; t < end; ++t) {
        const Thread& thread = threads_[t];
        if (thread.where == Where::kWarpBarrier && (thread.mask & live & ~waiting) == 0) released |= 1u << (t - first);
      }
      for (int64_t t = first; t < end; ++t) {
        if (!(released >> (t - first) & 1u)) continue;
        threads_[t].lanes = threads_[t].mask & live;
        threads_[t].where = Where::kRunnable;
        opened = true;
      }
    }
    return opened;
  }

  // "kernel 'k', block (1, 0, 0) of 4 threads: threads 0-1 wait at
  // __syncthreads; thread 2 waits at __syncwarp(0x0000000f); thread 3 returned".
  std::string Deadlock() const {
    auto what = [](const Thread& t) -> std::string {
      switch (t.where) {
        case Where::kBlockBarrier:
          return "wait at __syncthreads";
        case Where::kWarpBarrier:
          return "wait at __syncwarp(" + Hex(t.mask) + ") (or a warp operation)";
        case Where::kReturned:
          return "returned";
        default:
          return "can run";
      }
    };
    std::string s = "SIMT emulator: deadlock in kernel '" + launch_->kernel_ + "', block (" +
                    std::to_string(index_[0]) + ", " + std::to_string(index_[1]) + ", " + std::to_string(index_[2]) +
                    ") of " + std::to_string(count_) + " threads: no thread can run and no barrier can open:";
    for (int64_t first = 0; first < count_;) {
      int64_t last = first;
      while (last + 1 < count_ && what(threads_[last + 1]) == what(threads_[first])) ++last;
      s += first ? "; " : " ";
      s += first == last ? "thread " : "threads ";
      s += std::to_string(first);
      if (last != first) s.append(1, '-').append(std::to_string(last));
      s.append(1, ' ').append(what(threads_[first]));
      first = last + 1;
    }
    return s;
  }

  static thread_local SimtBlock* current_;

  SimtLaunch* launch_;
  SparsetirSimtThread enter_;
  SparsetirSimtThread main_;
  void* closure_;
  int64_t count_;
  uint32_t index_[3];
  std::vector<Thread> threads_;
  int64_t running_ = -1;
};

thread_local SimtBlock* SimtBlock::current_ = nullptr;

namespace {

SimtLaunch* LaunchOf(void* ctx) { return static_cast<SimtLaunch*>(ctx); }

void* DynamicShared(void* ctx);

}  // namespace

namespace {
thread_local int scoped_order = -1;  // a ScopedSimtOrder's, or -1
}  // namespace

ScopedSimtOrder::ScopedSimtOrder(SimtOrder order) : previous_(scoped_order) {
  scoped_order = static_cast<int>(order);
}
ScopedSimtOrder::~ScopedSimtOrder() { scoped_order = previous_; }

bool SimtRaceCheckRequested() {
  const char* order = std::getenv("SPARSETIR_EMULATE_ORDER");
  return order && std::strcmp(order, "check") == 0;
}

SimtOrder SimtOrderFromEnvironment() {
  if (scoped_order >= 0) return static_cast<SimtOrder>(scoped_order);
  const char* order = std::getenv("SPARSETIR_EMULATE_ORDER");
  if (order && std::strcmp(order, "reverse") == 0) return SimtOrder::kReverse;
  if (order && std::strcmp(order, "shuffle") == 0) return SimtOrder::kShuffled;
  return SimtOrder::kForward;
}

SimtLaunch::SimtLaunch(std::string kernel, bool cooperative, SimtOrder order, size_t dynamic_shared_bytes)
    : kernel_(std::move(kernel)), dynamic_shared_bytes_(dynamic_shared_bytes) {
  abi_.ctx = this;
  abi_.cooperative = cooperative ? 1 : 0;
  abi_.order = static_cast<int32_t>(order);
  abi_.dynamic_shared = &DynamicShared;
  abi_.run_block = [](void* ctx, int64_t threads, uint32_t x, uint32_t y, uint32_t z, SparsetirSimtThread enter,
                      SparsetirSimtThread main, void* closure) -> int32_t {
    SimtLaunch* launch = LaunchOf(ctx);
    if (launch->failed()) return 1;
    if (threads > kMaxBlockThreads) {
      launch->Fail("SIMT emulator: kernel '" + launch->kernel_ + "' launched with blocks of " + std::to_string(threads) +
                   " threads; CUDA allows at most " + std::to_string(kMaxBlockThreads));
      return 1;
    }
    const uint32_t index[3] = {x, y, z};
    if (!launch->abi_.cooperative) {
      // No thread waits for another: one after another, on this stack.
      for (int64_t i = 0; i < threads; ++i) {
        const int64_t t = launch->abi_.order == static_cast<int32_t>(SimtOrder::kForward) ? i : threads - 1 - i;
        enter(closure, t);
        main(closure, t);
      }
      return launch->failed() ? 1 : 0;
    }
    return SimtBlock(launch, threads, index, enter, main, closure).Run() ? 0 : 1;
  };
  abi_.sync_block = [](void* ctx) {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' reached __syncthreads but was launched without fibers");
      return;
    }
    SimtBlock::Wait(Where::kBlockBarrier, 0);
  };
  abi_.sync_warp = [](void* ctx, uint32_t mask) -> uint32_t {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' reached a warp operation but was launched without fibers");
      return 0;
    }
    return SimtBlock::Wait(Where::kWarpBarrier, mask);
  };
}

std::string SimtLaunch::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void SimtLaunch::Fail(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.empty()) error_ = message;
  failed_.store(true, std::memory_order_relaxed);
}

namespace {

// A block's dynamic shared memory: one buffer per host thread, which runs one
// block at a time.
void* DynamicShared(void* ctx) {
  static thread_local std::vector<uint64_t> buffer;
  const size_t words = (LaunchOf(ctx)->dynamic_shared_bytes() + 7) / 8;
  if (buffer.size() < words) buffer.resize(words);
  return buffer.data();
}

}  // namespace

}  // namespace sparsetir
