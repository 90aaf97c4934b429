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

#if SPARSETIR_HAVE_BOOST_CONTEXT
using SwitchContext = boost::context::detail::fcontext_t;  // nullptr: not yet made
#else
using SwitchContext = ucontext_t;
#endif

// What a host thread's switches share: the fiber running (nullptr: the host
// thread's own stack), the side the last switch left, and where a fiber
// goes to suspend. A fiber that suspends goes back to the host thread, not
// to the fiber that switched to it: the scheduler runs on the host stack.
struct ThreadSide {
  Fiber* current = nullptr;
  Fiber* from = nullptr;
  SwitchContext host{};
#if SPARSETIR_ASAN
  void* host_fake_stack = nullptr;
  const void* host_bottom = nullptr;
  size_t host_size = 0;
#endif
};

ThreadSide& Side() {
  static thread_local ThreadSide side;
  return side;
}

}  // namespace

struct Fiber::Context {
  Stack stack;
  SwitchContext fiber{};  // where the fiber goes on
#if !SPARSETIR_HAVE_BOOST_CONTEXT
  bool made = false;
#endif
#if SPARSETIR_ASAN
  void* fake_stack = nullptr;  // ASan's frames of the fiber's stack, while it is switched out
#endif

  // Back to a fiber not yet entered, on the same stack.
  void Reset() {
#if SPARSETIR_HAVE_BOOST_CONTEXT
    fiber = nullptr;
#else
    made = false;
#endif
#if SPARSETIR_ASAN
    __asan_unpoison_memory_region(stack.bottom(), stack.size);  // an abandoned fiber's red zones
    fake_stack = nullptr;
#endif
  }
};

#if SPARSETIR_ASAN
namespace {

// ASan's side of arriving on a stack whose frames it saved in `fake_stack`
// when the stack was left (nullptr: never left). Arriving from the host
// thread, it learns the host's stack, where fibers suspend to.
void FinishSwitch(ThreadSide& side, void* fake_stack) {
  const void* bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
  if (!side.from) side.host_bottom = bottom, side.host_size = size;
}

}  // namespace
#endif

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
  ICHECK(Side().current != this) << "fiber: restarted from inside itself";
  main_ = main;
  arg_ = arg;
  finished_ = false;
  context_->Reset();
}

void Fiber::Switch(Fiber* from, Fiber* to) {
  ThreadSide& side = Side();
  [[maybe_unused]] Context* const leaving = from ? from->context_.get() : nullptr;
  Context* const going = to ? to->context_.get() : nullptr;
#if SPARSETIR_ASAN
  // ASan must be told when the stack changes under it: where the frames of
  // the side that leaves wait (none once it finished), and the stack that
  // runs next.
  void** fake_stack = leaving ? (from->finished_ ? nullptr : &leaving->fake_stack) : &side.host_fake_stack;
  if (going) {
    __sanitizer_start_switch_fiber(fake_stack, going->stack.bottom(), going->stack.size);
  } else {
    __sanitizer_start_switch_fiber(fake_stack, side.host_bottom, side.host_size);
  }
#endif
  side.current = to;
  side.from = from;
#if SPARSETIR_HAVE_BOOST_CONTEXT
  // A jump leaves its context behind in the transfer; the side it left
  // (`side.from`) keeps it, to be jumped back to.
  namespace bcd = boost::context::detail;
  static constexpr auto arrive = [](ThreadSide& side, bcd::fcontext_t left) {
    (side.from ? side.from->context_->fiber : side.host) = left;
  };
  auto trampoline = [](bcd::transfer_t transfer) {  // a fiber's first arrival
    arrive(Side(), transfer.fctx);
    Entry();
  };
  bcd::fcontext_t target = side.host;
  if (going) {
    if (!going->fiber) {
      going->fiber = bcd::make_fcontext(going->stack.top(), going->stack.size - going->stack.color, trampoline);
    }
    target = going->fiber;
  }
  arrive(side, bcd::jump_fcontext(target, nullptr).fctx);
#else
  if (going && !going->made) {
    ICHECK(getcontext(&going->fiber) == 0) << "fiber: getcontext failed";
    going->fiber.uc_stack.ss_sp = going->stack.bottom();
    going->fiber.uc_stack.ss_size = going->stack.size - going->stack.color;  // its top is stack.top()
    going->fiber.uc_link = nullptr;
    makecontext(&going->fiber, &Fiber::Entry, 0);
    going->made = true;
  }
  ICHECK(swapcontext(leaving ? &leaving->fiber : &side.host, going ? &going->fiber : &side.host) == 0)
      << "fiber: swapcontext failed";
#endif
  // Back on `from`'s stack, switched to by `side.from`.
#if SPARSETIR_ASAN
  FinishSwitch(side, leaving ? leaving->fake_stack : side.host_fake_stack);
#endif
}

void Fiber::Entry() {
  Fiber* self = Side().current;
#if SPARSETIR_ASAN
  FinishSwitch(Side(), self->context_->fake_stack);
#endif
  self->main_(self->arg_);
  self->finished_ = true;
  Switch(self, nullptr);
  __builtin_unreachable();  // a finished fiber is never switched back to
}

Fiber* Fiber::Resume() {
  ICHECK(!finished_) << "fiber: resumed after it finished";
  ICHECK(Side().current == nullptr) << "fiber: a fiber resumed another (fibers switch with SwitchTo)";
  Switch(nullptr, this);
  return Side().from;
}

void Fiber::Suspend() {
  Fiber* self = Side().current;
  ICHECK(self != nullptr) << "fiber: Suspend() outside a fiber";
  Switch(self, nullptr);
}

void Fiber::SwitchTo(Fiber* next) {
  Fiber* self = Side().current;
  ICHECK(self != nullptr) << "fiber: SwitchTo() outside a fiber";
  ICHECK(next != nullptr && next != self && !next->finished_) << "fiber: switched to itself or to a finished fiber";
  Switch(self, next);
}

const char* Fiber::Switcher() {
#if SPARSETIR_HAVE_BOOST_CONTEXT
  return "fcontext";
#else
  return "ucontext";
#endif
}

}  // namespace sparsetir
