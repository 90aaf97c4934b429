#include "support/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "support/error.h"

#if SPARSETIR_HAVE_BOOST_CONTEXT
#include <boost/context/detail/fcontext.hpp>
#else
#include <ucontext.h>
#endif

// AddressSanitizer must be told when the stack changes under it, and a stack
// that goes back to the pool must be unpoisoned (an abandoned fiber leaves
// its frames' red zones behind).
#if defined(__SANITIZE_ADDRESS__)
#define SPARSETIR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARSETIR_ASAN 1
#endif
#endif
#if SPARSETIR_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace sparsetir {
namespace {

// Kernel threads run shallow code (a loop nest, a few helpers); 256 KiB
// leaves room for unoptimized frames and local arrays. Only the pages a
// thread touches are ever backed (MAP_NORESERVE).
constexpr size_t kStackBytes = 256 * 1024;

// Stacks start at different offsets within their top page ("colors", 16 of
// 256 bytes): a fiber's frames at a switch sit within a few hundred bytes of
// its top, and the L1 data cache picks a line's set by its offset within a
// page (32 KiB, 8 ways: 64 sets of 64 bytes on Zen 4). Were every top at a
// page boundary, the 32 fibers of a warp would take turns evicting each
// other's frames from the same few sets at every switch.
constexpr size_t kStackColors = 16;
constexpr size_t kStackColorBytes = 256;

struct Stack {
  char* base = nullptr;  // the guard page
  size_t size = 0;       // usable bytes above it
  size_t color = 0;      // bytes left unused at the top (a multiple of 16)
  char* bottom() const { return base + Page(); }
  char* top() const { return bottom() + size - color; }
  static size_t Page() {
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return page;
  }
};

void Unmap(const Stack& s) { munmap(s.base, s.size + Stack::Page()); }

// Set when the host thread's pool is destroyed at the thread's exit: fibers
// kept in thread-local storage of their own (the SIMT emulator keeps a
// block's) may be destroyed after it. A bool has no destructor, so it can be
// read at any point of the exit.
thread_local bool pool_destroyed = false;

// Stacks are reused across the blocks a host thread runs: a block of 1024
// threads would otherwise map and unmap 1024 stacks.
class StackPool {
 public:
  ~StackPool() {
    for (Stack& s : free_) Unmap(s);
    pool_destroyed = true;
  }
  Stack Take() {
    if (!free_.empty()) {
      Stack s = free_.back();
      free_.pop_back();
      return s;
    }
    Stack s;
    s.size = kStackBytes;
    void* p = mmap(nullptr, s.size + Stack::Page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    ICHECK(p != MAP_FAILED) << "fiber: cannot map a stack of " << s.size << " bytes";
    s.base = static_cast<char*>(p);
    ICHECK(mprotect(s.base, Stack::Page(), PROT_NONE) == 0) << "fiber: cannot protect a stack's guard page";
    s.color = made_++ % kStackColors * kStackColorBytes;
    return s;
  }
  void Give(Stack s) {
#if SPARSETIR_ASAN
    __asan_unpoison_memory_region(s.bottom(), s.size);
#endif
    free_.push_back(s);
  }

 private:
  std::vector<Stack> free_;
  size_t made_ = 0;
};

StackPool& Pool() {
  static thread_local StackPool pool;
  return pool;
}

thread_local Fiber* current = nullptr;

}  // namespace

struct Fiber::Context {
  Stack stack;
#if SPARSETIR_HAVE_BOOST_CONTEXT
  boost::context::detail::fcontext_t fiber = nullptr;  // where the fiber goes on
  boost::context::detail::fcontext_t host = nullptr;   // where Resume() goes on
#else
  ucontext_t fiber;
  ucontext_t host;
  bool made = false;
#endif
#if SPARSETIR_ASAN
  void* host_fake_stack = nullptr;
  void* fiber_fake_stack = nullptr;
  const void* host_bottom = nullptr;
  size_t host_size = 0;
#endif

  // The host thread's side of a switch into the fiber, and back.
  void BeforeEnter() {
#if SPARSETIR_ASAN
    __sanitizer_start_switch_fiber(&host_fake_stack, stack.bottom(), stack.size);
#endif
  }
  void AfterLeave() {
#if SPARSETIR_ASAN
    __sanitizer_finish_switch_fiber(host_fake_stack, nullptr, nullptr);
#endif
  }
  // The fiber's side: arriving (first or again), and leaving (for good when
  // `finished`, so that ASan drops the fiber's fake stack).
  void Arrived() {
#if SPARSETIR_ASAN
    __sanitizer_finish_switch_fiber(fiber_fake_stack, &host_bottom, &host_size);
#endif
  }
  void Leaving(bool finished) {
#if SPARSETIR_ASAN
    __sanitizer_start_switch_fiber(finished ? nullptr : &fiber_fake_stack, host_bottom, host_size);
#else
    (void)finished;
#endif
  }

  // Back to a fiber not yet entered, on the same stack.
  void Reset() {
#if SPARSETIR_HAVE_BOOST_CONTEXT
    fiber = nullptr;
    host = nullptr;
#else
    made = false;
#endif
#if SPARSETIR_ASAN
    __asan_unpoison_memory_region(stack.bottom(), stack.size);  // an abandoned fiber's red zones
    fiber_fake_stack = nullptr;
#endif
  }

#if SPARSETIR_HAVE_BOOST_CONTEXT
  static void Trampoline(boost::context::detail::transfer_t from) {
    Fiber* self = static_cast<Fiber*>(from.data);
    self->context_->host = from.fctx;
    Fiber::Entry(self);
  }
  void Enter(Fiber* self) {
    namespace bcd = boost::context::detail;
    if (!fiber) fiber = bcd::make_fcontext(stack.top(), stack.size - stack.color, &Trampoline);
    fiber = bcd::jump_fcontext(fiber, self).fctx;
  }
  void Leave() { host = boost::context::detail::jump_fcontext(host, nullptr).fctx; }
#else
  // makecontext passes int arguments only: the pointer in two halves.
  static void Trampoline(unsigned hi, unsigned lo) {
    Fiber::Entry(reinterpret_cast<Fiber*>((static_cast<uintptr_t>(hi) << 32) | lo));
  }
  void Enter(Fiber* self) {
    if (!made) {
      ICHECK(getcontext(&fiber) == 0) << "fiber: getcontext failed";
      fiber.uc_stack.ss_sp = stack.bottom();
      fiber.uc_stack.ss_size = stack.size - stack.color;  // its top is stack.top()
      fiber.uc_link = nullptr;
      const uintptr_t p = reinterpret_cast<uintptr_t>(self);
      makecontext(&fiber, reinterpret_cast<void (*)()>(&Trampoline), 2, static_cast<unsigned>(p >> 32),
                  static_cast<unsigned>(p & 0xffffffffu));
      made = true;
    }
    ICHECK(swapcontext(&host, &fiber) == 0) << "fiber: swapcontext failed";
  }
  void Leave() { ICHECK(swapcontext(&fiber, &host) == 0) << "fiber: swapcontext failed"; }
#endif
};

Fiber::Fiber(Main main, void* arg) : main_(main), arg_(arg), context_(std::make_unique<Context>()) {
  context_->stack = Pool().Take();
}

// A fiber that never finished (a deadlocked kernel thread) is abandoned: its
// frames hold nothing to release, so its stack is simply reused.
Fiber::~Fiber() {
  if (pool_destroyed) {
    Unmap(context_->stack);
  } else {
    Pool().Give(context_->stack);
  }
}

void Fiber::Restart(Main main, void* arg) {
  ICHECK(current != this) << "fiber: restarted from inside itself";
  main_ = main;
  arg_ = arg;
  finished_ = false;
  context_->Reset();
}

void Fiber::Entry(Fiber* self) {
  self->context_->Arrived();
  self->main_(self->arg_);
  self->finished_ = true;
  self->context_->Leaving(/*finished=*/true);
  self->context_->Leave();
  __builtin_unreachable();  // a finished fiber is never resumed
}

void Fiber::Resume() {
  ICHECK(!finished_) << "fiber: resumed after it finished";
  ICHECK(current == nullptr) << "fiber: a fiber resumed another";
  current = this;
  context_->BeforeEnter();
  context_->Enter(this);
  context_->AfterLeave();
  current = nullptr;
}

void Fiber::Suspend() {
  Fiber* self = current;
  ICHECK(self != nullptr) << "fiber: Suspend() outside a fiber";
  self->context_->Leaving(/*finished=*/false);
  self->context_->Leave();
  self->context_->Arrived();
}

const char* Fiber::Switcher() {
#if SPARSETIR_HAVE_BOOST_CONTEXT
  return "fcontext";
#else
  return "ucontext";
#endif
}

}  // namespace sparsetir
