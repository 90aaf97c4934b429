#include "runtime/simt_scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "support/fiber.h"

namespace sparsetir {
namespace {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kMaxBlockThreads = 1024;  // CUDA's limit
// The addresses a thread's last spins waited at: a spin over this many
// flags or fewer is one, a look elsewhere is the thread moving on.
constexpr int kRecentLooks = 4;

// kPhaseWait: at a cuda::barrier, until its phase moves on. kSpin: at a spin
// point, until the other threads of the block have had their turn.
enum class Where { kRunnable, kBlockBarrier, kWarpBarrier, kPhaseWait, kSpin, kReturned };

std::string Hex(uint32_t mask) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(mask >> shift) & 0xf];
  return s;
}

// "10", "0.5": seconds as a person writes them.
std::string SecondsText(double seconds) {
  std::string s = std::to_string(seconds);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

// The threads of one block, run as fibers on the calling host thread.
class SimtBlock {
 public:
  // What a thread brings to a warp barrier besides its arrival.
  // kConverge: coalesced_threads(), whose group is whoever waits at the same
  // call site (`value`) once no other warp barrier can open.
  enum class Exchange { kNone, kShuffle, kVote, kConverge };

 private:
  struct Thread {
    SimtBlock* block = nullptr;
    int64_t index = 0;
    std::unique_ptr<Fiber> fiber;
    Where where = Where::kRunnable;
    uint32_t mask = 0;   // at a warp barrier: the lanes it waits for
    // When released from a warp barrier: the lanes that took part (from a
    // block barrier: how many threads).
    uint32_t lanes = 0;
    // A warp operation's or a block vote's: what the thread passed, whose
    // value it asked for (a shuffle) and, once released, what it gets back.
    Exchange exchange = Exchange::kNone;
    uint64_t value = 0;
    int64_t source = -1;
    uint64_t result = 0;
    // At a cuda::barrier: its phase, which must differ from `value` first.
    const volatile uint32_t* phase = nullptr;
    const char* spin = nullptr;  // at a spin point: what it is
    const void* recent[kRecentLooks] = {};
    int next_recent = 0;

    // Whether `address` is one of those its last spins waited at.
    bool LookedAt(const void* address) const {
      return address && std::find(std::begin(recent), std::end(recent), address) != std::end(recent);
    }
  };

 public:
  SimtBlock(SimtLaunch* launch, int64_t threads, const uint32_t index[3], SparsetirSimtThread enter,
            SparsetirSimtThread main, void* closure)
      : launch_(launch), enter_(enter), main_(main), closure_(closure), count_(threads) {
    std::memcpy(index_, index, sizeof(index_));
  }

  // Runs every thread to its end; false (after recording why) on a deadlock.
  // Warp by warp: a warp's lanes run, and its warp barriers open, until each
  // lane has returned or waits at __syncthreads (or at a warp barrier that
  // cannot open before then); then the block barrier opens and the warps run
  // again. The lanes of a warp meet far more often than the warps of a block,
  // and a warp's 32 fibers stay in the cache while it runs.
  bool Run() {
    const std::vector<std::vector<int64_t>> warps = WarpsInOrder();
    // The host thread's threads from its last block, fibers and all (a block
    // run from inside another finds none and makes its own).
    threads_.swap(Kept());
    threads_.resize(static_cast<size_t>(count_));
    for (int64_t t = 0; t < count_; ++t) {
      Thread& thread = threads_[t];
      std::unique_ptr<Fiber> fiber = std::move(thread.fiber);
      thread = Thread();
      thread.block = this;
      thread.index = t;
      // Every fiber starts again here, pointing at where its Thread is now.
      if (fiber) {
        fiber->Restart(&SimtBlock::ThreadMain, &thread);
        thread.fiber = std::move(fiber);
      } else {
        thread.fiber = std::make_unique<Fiber>(&SimtBlock::ThreadMain, &thread);
      }
    }
    SimtBlock* outer = current_;
    current_ = this;
    bool ok = true;
    for (;;) {
      const int64_t events = events_;
      for (const std::vector<int64_t>& lanes : warps) RunWarp(lanes);
      if (returned_ == count_) break;
      // A warp may have completed the phase another warp waits for.
      if (OpenPhaseWaits(0, count_)) continue;
      // Spinning threads wait for a write of another thread: every other warp
      // has had its turn, so they look again (and the block barrier cannot
      // open without them).
      if (Spinning()) {
        if (!KeepSpinning(events_ != events)) {
          ok = false;
          break;
        }
        ReleaseSpins(0, count_);
        continue;
      }
      if (!OpenBlockBarrier()) {
        launch_->Fail(Deadlock());
        ok = false;
        break;
      }
    }
    current_ = outer;
    threads_.swap(Kept());
    return ok;
  }

  // From a kernel thread (through the ABI): wait at a barrier, passing
  // `value` to a warp operation; returns the thread, released.
  static const Thread& Wait(Where where, uint32_t mask, Exchange exchange = Exchange::kNone, uint64_t value = 0,
                            int64_t source = -1) {
    SimtBlock* block = current_;
    Thread& me = block->threads_[block->running_];
    me.where = where;
    ++block->events_;
    block->warp_changed_ |= where == Where::kWarpBarrier;
    me.mask = mask | (1u << (me.index % kWarpSize));  // a lane always syncs with itself
    me.exchange = exchange;
    me.value = value;
    me.source = source;
    block->PassTurn();
    return me;
  }

  // From a kernel thread: wait until `*phase` differs from `old` (the
  // arrival that completes a cuda::barrier's phase moves it on). Another
  // lane of the warp or another warp may be the one that arrives.
  static void WaitForPhase(const volatile uint32_t* phase, uint32_t old) {
    SimtBlock* block = current_;
    Thread& me = block->threads_[block->running_];
    me.where = Where::kPhaseWait;
    me.phase = phase;
    me.value = old;
    ++block->events_;
    block->PassTurn();
  }

  // From a kernel thread at a spin point: the other runnable lanes of its
  // warp, then (unless the warp progressed meanwhile) the other warps, run
  // before it goes on. A wait at an address none of its last spins waited at
  // is the thread moving on (a loop over many addresses is no spin).
  static void Spin(const char* what, const void* address) {
    SimtBlock* block = current_;
    Thread& me = block->threads_[block->running_];
    if (address && !me.LookedAt(address)) {
      me.recent[me.next_recent] = address;
      me.next_recent = (me.next_recent + 1) % kRecentLooks;
      ++block->events_;
    }
    me.where = Where::kSpin;
    me.spin = what;
    block->PassTurn();
  }
  static bool Active() { return current_ != nullptr; }

  // The lanes of the running warp that had not returned when its current
  // pass began (__activemask): the same for every lane of the pass, as
  // lanes that run in turn would otherwise see the ones before them return.
  static uint32_t LiveLanes() { return current_->pass_live_; }

 private:
  static std::vector<Thread>& Kept() {
    static thread_local std::vector<Thread> kept;
    return kept;
  }

  // The running lane waits: the turn passes to the warp's next lane that can
  // run, fiber to fiber; after the last, back to RunWarp.
  void PassTurn() {
    if (Thread* next = EnterNextLane()) {
      Fiber::SwitchTo(next->fiber.get());
    } else {
      Fiber::Suspend();
    }
  }

  static void ThreadMain(void* arg) {
    Thread* thread = static_cast<Thread*>(arg);
    thread->block->main_(thread->block->closure_, thread->index);
  }

  // The warps of the block and the lanes of each, in the launch's order:
  // forward, reversed, or shuffled (warps and lanes both).
  std::vector<std::vector<int64_t>> WarpsInOrder() const {
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
    // Each warp where its first lane in `order` comes, its lanes as they come.
    const int64_t count = (count_ + kWarpSize - 1) / kWarpSize;
    std::vector<int64_t> slot(static_cast<size_t>(count), -1);
    std::vector<std::vector<int64_t>> warps;
    for (int64_t t : order) {
      int64_t& s = slot[static_cast<size_t>(t / kWarpSize)];
      if (s < 0) s = static_cast<int64_t>(warps.size()), warps.emplace_back();
      warps[static_cast<size_t>(s)].push_back(t);
    }
    return warps;
  }

  // Runs the lanes of one warp, in the order of `lanes`, until none can run.
  // A pass over the lanes starts here and goes on from lane to lane as each
  // waits (Wait); it comes back here when a lane returns, or when the last
  // lane that can run waits.
  void RunWarp(const std::vector<int64_t>& lanes) {
    lanes_ = &lanes;
    const int64_t first = lanes.front() - lanes.front() % kWarpSize;
    // The live lanes as each pass begins: here for the first, then those
    // OpenWarpBarriers counted (no lane returns between it and the next pass).
    pass_live_ = LiveLanesOf(first);
    warp_waiting_ = false;
    const int64_t end = std::min(first + kWarpSize, count_);
    int64_t events = events_;
    do {
      warp_changed_ = warp_waiting_;
      cursor_ = -1;
      while (Thread* thread = EnterNextLane()) {
        thread->fiber->Resume();
        Thread& last = threads_[running_];  // the lane that came back
        // A lane that returns leaves the masks it was in: a meeting may open.
        if (last.fiber->finished()) last.where = Where::kReturned, ++returned_, ++events_, warp_changed_ = true;
      }
      // Lanes that spin look again after a pass in which another lane of the
      // warp moved on (it may have written what they wait for); after a pass
      // of spins alone the other warps run first.
    } while (OpenWarp(first) || (std::exchange(events, events_) != events_ && ReleaseSpins(first, end)));
  }

  bool Spinning() const {
    return std::any_of(threads_.begin(), threads_.end(), [](const Thread& t) { return t.where == Where::kSpin; });
  }

  // Makes the threads in [begin, end) that wait at a spin point runnable;
  // false if there were none.
  bool ReleaseSpins(int64_t begin, int64_t end) {
    bool released = false;
    for (int64_t t = begin; t < end; ++t) {
      Thread& thread = threads_[t];
      if (thread.where != Where::kSpin) continue;
      thread.where = Where::kRunnable;
      released = true;
    }
    return released;
  }

  // After a round of the block in which threads spun: whether they may spin
  // on. A round in which no thread arrived anywhere or returned (`moved`
  // false) leaves the host thread to the others (another block's thread may
  // be the one that writes what they wait for) and starts, or goes on with,
  // the spin clock; past the launch's spin limit the block fails, naming
  // where its threads are. A block of a failed launch stops at once.
  bool KeepSpinning(bool moved) {
    if (launch_->failed()) return false;
    if (moved) {
      spinning_since_.reset();
      return true;
    }
    std::this_thread::yield();
    const auto now = std::chrono::steady_clock::now();
    if (!spinning_since_) spinning_since_ = now;
    if (std::chrono::duration<double>(now - *spinning_since_).count() <= launch_->spin_seconds_) return true;
    launch_->Fail("SIMT emulator: endless spin in " + BlockText() + ": its threads spun for " +
                  SecondsText(launch_->spin_seconds_) +
                  " s (SPARSETIR_EMULATE_SPIN_SECONDS) with no thread arriving anywhere or returning:" + ThreadsText() +
                  ". A spin waits for another thread's write: no thread of this block makes it, and if another "
                  "block does, that block may not run meanwhile (the emulator runs one block per host thread at "
                  "a time, in no order a kernel may count on; CUDA promises no two blocks run at once either)");
    return false;
  }

  // Releases lanes of the warp starting at thread `first`: those whose
  // cuda::barrier phase moved on, else those a warp meeting releases. False
  // if none. The warp's meetings are looked at once no phase wait can be
  // released (a released lane may still join a coalesced group); a lane
  // that reached one this pass has them looked at after the next pass.
  bool OpenWarp(int64_t first) {
    if (OpenPhaseWaits(first, std::min(first + kWarpSize, count_))) {
      pass_live_ = LiveLanesOf(first);
      warp_waiting_ = warp_waiting_ || warp_changed_;
      return true;
    }
    return warp_changed_ && OpenWarpBarriers(first);
  }

  // Makes the threads in [begin, end) whose cuda::barrier phase moved on
  // runnable; false if there were none.
  bool OpenPhaseWaits(int64_t begin, int64_t end) {
    bool released = false;
    for (int64_t t = begin; t < end; ++t) {
      Thread& thread = threads_[t];
      if (thread.where != Where::kPhaseWait || *thread.phase == static_cast<uint32_t>(thread.value)) continue;
      thread.where = Where::kRunnable;
      ++events_;
      released = true;
    }
    return released;
  }

  // The lanes of the warp starting at thread `first` that have not returned.
  uint32_t LiveLanesOf(int64_t first) const {
    const int64_t end = std::min(first + kWarpSize, count_);
    uint32_t live = 0;
    for (int64_t t = first; t < end; ++t) {
      if (threads_[t].where != Where::kReturned) live |= 1u << (t - first);
    }
    return live;
  }

  // The running warp's next lane in order (after position cursor_) that can
  // run, made the running one (its threadIdx set); nullptr if none is left.
  Thread* EnterNextLane() {
    const std::vector<int64_t>& lanes = *lanes_;
    while (++cursor_ < static_cast<int64_t>(lanes.size())) {
      const int64_t t = lanes[cursor_];
      if (threads_[t].where != Where::kRunnable) continue;
      running_ = t;
      enter_(closure_, t);
      return &threads_[t];
    }
    return nullptr;
  }

  // Releases every thread once all threads have returned or wait at
  // __syncthreads; false if there were none to release.
  // Each gets how many of them passed a true predicate (__syncthreads_count
  // & co.; __syncthreads passes none) and how many there were.
  bool OpenBlockBarrier() {
    uint32_t waiting = 0, count = 0;
    for (const Thread& t : threads_) {
      if (t.where != Where::kBlockBarrier && t.where != Where::kReturned) return false;
      if (t.where == Where::kBlockBarrier) ++waiting, count += t.value != 0;
    }
    for (Thread& t : threads_) {
      if (t.where != Where::kBlockBarrier) continue;
      t.where = Where::kRunnable;
      t.result = count;
      t.lanes = waiting;
    }
    return waiting != 0;
  }

  // Releases the lanes of the warp starting at thread `first` that meet: the
  // lanes waiting with the same mask at the same kind of warp operation, once
  // every live lane of that mask is among them (CUDA leaves a meeting of
  // other masks or other operations undefined: here the lanes keep waiting,
  // and if nothing else can run, the launch reports a deadlock). False if
  // none could be released.
  bool OpenWarpBarriers(int64_t first) {
    const int64_t end = std::min(first + kWarpSize, count_);
    const uint32_t live = LiveLanesOf(first);
    pass_live_ = live;
    // The meetings the waiting lanes form (usually one): a mask, an
    // operation, the lanes that wait there and, for a vote, the lanes whose
    // predicate holds.
    struct Meeting {
      uint32_t mask;
      Exchange exchange;
      uint32_t lanes;
      uint32_t ballot;
    };
    Meeting meetings[kWarpSize];
    int meeting_of[kWarpSize];
    int count = 0;
    uint32_t waiting = 0;
    for (int64_t t = first; t < end; ++t) {
      const Thread& thread = threads_[t];
      if (thread.where != Where::kWarpBarrier) continue;
      waiting |= 1u << (t - first);
      if (thread.exchange == Exchange::kConverge) continue;
      int m = 0;
      while (m < count && (meetings[m].mask != thread.mask || meetings[m].exchange != thread.exchange)) ++m;
      if (m == count) meetings[count++] = {thread.mask, thread.exchange, 0, 0};
      const uint32_t bit = 1u << (t - first);
      meetings[m].lanes |= bit;
      if (thread.value) meetings[m].ballot |= bit;
      meeting_of[t - first] = m;
    }
    // Every result is read before any lane is released: from the values the
    // lanes brought to this meeting.
    uint32_t released = 0;
    for (int m = 0; m < count; ++m) {
      if ((meetings[m].mask & live & ~meetings[m].lanes) == 0) released |= meetings[m].lanes;
    }
    for (int64_t t = first; t < end; ++t) {
      if (!(released >> (t - first) & 1u)) continue;
      Thread& thread = threads_[t];
      const Meeting& meeting = meetings[meeting_of[t - first]];
      thread.lanes = meeting.lanes;  // the live lanes of its mask
      if (thread.exchange == Exchange::kShuffle) {
        const int64_t source = thread.source;
        thread.result = source >= 0 && source < count_ ? threads_[source].value : thread.value;
      } else {
        thread.result = thread.exchange == Exchange::kVote ? meeting.ballot : 0;
      }
    }
    if (released == 0) released = OpenConvergences(first);
    for (int64_t t = first; t < end; ++t) {
      if (released >> (t - first) & 1u) threads_[t].where = Where::kRunnable;
    }
    warp_waiting_ = (waiting & ~released) != 0;
    return released != 0;
  }

  // coalesced_threads() of the warp starting at thread `first`, once nothing
  // else of the warp can open: each lane's group is the lanes waiting at the
  // same call site. Later would be never; earlier would split a group whose
  // other lanes are still on their way to the site (after a __syncwarp of
  // their own, say). The released lanes.
  uint32_t OpenConvergences(int64_t first) {
    const int64_t end = std::min(first + kWarpSize, count_);
    uint32_t released = 0;
    for (int64_t t = first; t < end; ++t) {
      Thread& thread = threads_[t];
      if (thread.where != Where::kWarpBarrier || thread.exchange != Exchange::kConverge) continue;
      uint32_t group = 0;
      for (int64_t u = first; u < end; ++u) {
        const Thread& other = threads_[u];
        const bool converging = other.where == Where::kWarpBarrier && other.exchange == Exchange::kConverge;
        if (converging && other.value == thread.value) group |= 1u << (u - first);
      }
      thread.lanes = group;
      released |= 1u << (t - first);
    }
    return released;
  }

  std::string Deadlock() const {
    return "SIMT emulator: deadlock in " + BlockText() + ": no thread can run and no barrier can open:" + ThreadsText();
  }

  // "kernel 'k', block (1, 0, 0) of 4 threads".
  std::string BlockText() const {
    return "kernel '" + launch_->kernel_ + "', block (" + std::to_string(index_[0]) + ", " +
           std::to_string(index_[1]) + ", " + std::to_string(index_[2]) + ") of " + std::to_string(count_) +
           " threads";
  }

  // Where each thread is, runs of threads in the same place together:
  // " threads 0-1 wait at __syncthreads; thread 2 wait at __syncwarp(0x0000000f); thread 3 returned".
  std::string ThreadsText() const {
    auto what = [](const Thread& t) -> std::string {
      switch (t.where) {
        case Where::kBlockBarrier:
          return t.exchange == Exchange::kVote ? "wait at __syncthreads_count, _and or _or" : "wait at __syncthreads";
        case Where::kWarpBarrier:
          switch (t.exchange) {
            case Exchange::kShuffle:
              return "wait at a warp shuffle (__shfl*_sync) of " + Hex(t.mask);
            case Exchange::kVote:
              return "wait at a warp vote (__ballot_sync, __any_sync or __all_sync) of " + Hex(t.mask);
            case Exchange::kConverge:
              return "wait at coalesced_threads()";
            default:
              return "wait at __syncwarp(" + Hex(t.mask) + ")";
          }
        case Where::kPhaseWait:
          return "wait at a cuda::barrier or cuda::pipeline";
        case Where::kSpin:
          return std::string("spin at ") + t.spin;
        case Where::kReturned:
          return "returned";
        default:
          return "can run";
      }
    };
    std::string s;
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
  const std::vector<int64_t>* lanes_ = nullptr;  // the running warp's, in order
  int64_t cursor_ = -1;                          // the running lane's position in lanes_
  uint32_t pass_live_ = 0;                       // the running warp's live lanes as its pass began
  int64_t returned_ = 0;
  // This pass a lane of the running warp reached a warp barrier or returned,
  // or lanes still wait at one: a warp barrier may open.
  bool warp_changed_ = false;
  bool warp_waiting_ = false;  // lanes of the running warp wait at warp barriers the last opening left
  // Arrivals at barriers and spin-free waits, releases of phase waits and
  // returns so far: a round that adds none made no progress.
  int64_t events_ = 0;
  // Since when the block's threads spin without progress; none while they
  // progress.
  std::optional<std::chrono::steady_clock::time_point> spinning_since_;
};

thread_local SimtBlock* SimtBlock::current_ = nullptr;

namespace {

SimtLaunch* LaunchOf(void* ctx) { return static_cast<SimtLaunch*>(ctx); }

void* DynamicShared(void* ctx);

// The thread a host thread runs without fibers (a kernel whose source names
// no barrier, warp operation or spin point), and since when it spins.
struct LoneThread {
  int64_t thread = 0;
  uint32_t x = 0, y = 0, z = 0;
  int64_t threads = 0;
  std::optional<std::chrono::steady_clock::time_point> spinning_since;
};
thread_local LoneThread lone_thread;

}  // namespace

// A spin point of a thread run without fibers: no other thread of its block
// runs until it returns, so it may only wait for another block's; the host
// thread steps aside for those. False once the launch failed: past the spin
// limit (this thread's spin, which fails it) or elsewhere.
bool SimtLaunch::LoneSpin(SimtLaunch* launch, const char* what) {
  if (launch->failed()) return false;
  LoneThread& lone = lone_thread;
  std::this_thread::yield();
  const auto now = std::chrono::steady_clock::now();
  if (!lone.spinning_since) lone.spinning_since = now;
  if (std::chrono::duration<double>(now - *lone.spinning_since).count() <= launch->spin_seconds_) return true;
  launch->Fail("SIMT emulator: endless spin in kernel '" + launch->kernel_ + "', block (" + std::to_string(lone.x) +
               ", " + std::to_string(lone.y) + ", " + std::to_string(lone.z) + ") of " +
               std::to_string(lone.threads) + " threads: thread " + std::to_string(lone.thread) + " spun for " +
               SecondsText(launch->spin_seconds_) + " s (SPARSETIR_EMULATE_SPIN_SECONDS) at " + what +
               ". Its source names no barrier, warp operation, atomic or fence, so the emulator runs the block's "
               "threads one after another, and none after it can write what it waits for");
  return false;
}

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
  // How long a block's threads may spin without progress.
  if (const char* text = std::getenv("SPARSETIR_EMULATE_SPIN_SECONDS"); text && *text) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (*end != '\0' || !(seconds > 0) || seconds > 1e6) {
      Fail(std::string("SIMT emulator: SPARSETIR_EMULATE_SPIN_SECONDS must be a number of seconds above 0 (at most "
                       "1e6), got '") + text + "'");
    } else {
      spin_seconds_ = seconds;
    }
  }
  abi_.ctx = this;
  abi_.cooperative = cooperative ? 1 : 0;
  abi_.order = static_cast<int32_t>(order);
  abi_.dynamic_shared = &DynamicShared;
  abi_.run_block = [](void* ctx, int64_t threads, uint32_t x, uint32_t y, uint32_t z, SparsetirSimtThread enter,
                      SparsetirSimtThread main, void* closure) -> int32_t {
    SimtLaunch* launch = LaunchOf(ctx);
    if (launch->failed()) return 1;
    if (launch->dynamic_shared_bytes_ > kSimtMaxSharedBytes) {
      launch->Fail("SIMT emulator: kernel '" + launch->kernel_ + "' launched with " +
                   std::to_string(launch->dynamic_shared_bytes_) +
                   " bytes of dynamic shared memory; CUDA allows at most " + std::to_string(kSimtMaxSharedBytes) +
                   " a block");
      return 1;
    }
    if (threads > kMaxBlockThreads) {
      launch->Fail("SIMT emulator: kernel '" + launch->kernel_ + "' launched with blocks of " + std::to_string(threads) +
                   " threads; CUDA allows at most " + std::to_string(kMaxBlockThreads));
      return 1;
    }
    const uint32_t index[3] = {x, y, z};
    launch->threads_run_.fetch_add(threads, std::memory_order_relaxed);
    if (!launch->abi_.cooperative) {
      // No thread waits for another: one after another, on this stack.
      for (int64_t i = 0; i < threads; ++i) {
        const int64_t t = launch->abi_.order == static_cast<int32_t>(SimtOrder::kForward) ? i : threads - 1 - i;
        lone_thread = {t, index[0], index[1], index[2], threads, std::nullopt};
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
  abi_.vote_block = [](void* ctx, int32_t predicate, int32_t* threads) -> int32_t {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' reached a block vote (__syncthreads_count, _and, _or) but was launched without fibers");
      *threads = 0;
      return 0;
    }
    const auto& me = SimtBlock::Wait(Where::kBlockBarrier, 0, SimtBlock::Exchange::kVote, predicate != 0);
    *threads = static_cast<int32_t>(me.lanes);
    return static_cast<int32_t>(me.result);
  };
  abi_.sync_warp = [](void* ctx, uint32_t mask) -> uint32_t {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' reached a warp operation but was launched without fibers");
      return 0;
    }
    return SimtBlock::Wait(Where::kWarpBarrier, mask).lanes;
  };
  abi_.shuffle_warp = [](void* ctx, uint32_t mask, uint64_t value, int64_t src) -> uint64_t {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' reached a warp shuffle but was launched without fibers");
      return value;
    }
    return SimtBlock::Wait(Where::kWarpBarrier, mask, SimtBlock::Exchange::kShuffle, value, src).result;
  };
  abi_.live_lanes = [](void* ctx) -> uint32_t {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' asked for its warp's live lanes but was launched without fibers");
      return 0;
    }
    return SimtBlock::LiveLanes();
  };
  abi_.converge_warp = [](void* ctx, uint64_t site) -> uint32_t {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' reached coalesced_threads() but was launched without fibers");
      return 0;
    }
    return SimtBlock::Wait(Where::kWarpBarrier, 0, SimtBlock::Exchange::kConverge, site).lanes;
  };
  abi_.wait_phase = [](void* ctx, const volatile uint32_t* phase, uint32_t old) {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' waited at a cuda::barrier but was launched without fibers");
      return;
    }
    SimtBlock::WaitForPhase(phase, old);
  };
  abi_.spin = [](void* ctx, const char* what, const void* address) -> int32_t {
    if (!SimtBlock::Active()) return LoneSpin(LaunchOf(ctx), what) ? 0 : 1;
    SimtBlock::Spin(what, address);
    return 0;  // a block that fails never resumes its threads
  };
  abi_.trap = [](void* ctx, const char* message) {
    LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ + "', " + message);
  };
  abi_.vote_warp = [](void* ctx, uint32_t mask, int32_t predicate, uint32_t* lanes) -> uint32_t {
    if (!SimtBlock::Active()) {
      LaunchOf(ctx)->Fail("SIMT emulator: kernel '" + LaunchOf(ctx)->kernel_ +
                          "' reached a warp vote but was launched without fibers");
      *lanes = 0;
      return 0;
    }
    const auto& me = SimtBlock::Wait(Where::kWarpBarrier, mask, SimtBlock::Exchange::kVote, predicate != 0);
    *lanes = me.lanes;
    return static_cast<uint32_t>(me.result);
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
// block at a time, as large as CUDA allows and never moved, so that a
// kernel's thread-local reference to it stays valid from launch to launch.
// Only the pages a launch touches are ever backed.
void* DynamicShared(void*) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  static thread_local std::unique_ptr<void, Free> buffer(std::aligned_alloc(128, kSimtMaxSharedBytes));
  return buffer.get();
}

}  // namespace

}  // namespace sparsetir
