// A fiber: a function that runs on a stack of its own and can suspend itself,
// handing control back to whoever resumed it. The SIMT emulator runs the
// threads of a block as fibers on one host thread (runtime/simt_scheduler.h),
// so a thread that reaches a barrier waits there while the others run. A
// fiber can also hand the turn straight to another (SwitchTo), one switch
// instead of two through the host thread's stack: the emulator passes it
// from lane to lane of a warp this way.
//
// The switch is Boost.Context's fcontext (a dozen instructions, about 12 ns)
// where the build found libboost_context (SPARSETIR_HAVE_BOOST_CONTEXT), else
// glibc's swapcontext (about 40x slower: it saves the signal mask with a
// system call). Stacks are mmap'ed with a guard page below them, so a stack
// overflow faults instead of writing over another fiber's stack.
#pragma once

#include <cstddef>
#include <memory>

namespace sparsetir {

class Fiber {
 public:
  using Main = void (*)(void* arg);

  // A fiber that will run main(arg) when first resumed. Its stack comes from
  // (and goes back to) a pool of the calling host thread.
  Fiber(Main main, void* arg);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Makes the fiber run main(arg) from its start when next resumed, on the
  // same stack, whether it finished or was abandoned while suspended (its
  // frames hold nothing to release). Not from inside the fiber. A block of
  // emulated threads reuses its fibers this way instead of making new ones.
  void Restart(Main main, void* arg);

  // Runs the fiber until it, or a fiber it switched to, suspends or
  // finishes; returns that fiber. From a host thread's own stack only
  // (fibers do not resume each other: they switch).
  Fiber* Resume();
  // From inside a fiber: back to the Resume() that ran it, or that ran the
  // fiber that switched to it.
  static void Suspend();
  // From inside a fiber: suspends it and runs `next` (not finished) in its
  // place, without a stop on the host thread's stack: one switch where
  // Suspend() and Resume() take two. `next` goes on until it suspends (the
  // same Resume() returns), finishes, or switches on; a later switch or
  // Resume() brings this one back. The SIMT emulator hands the turn from
  // lane to lane this way.
  static void SwitchTo(Fiber* next);
  bool finished() const { return finished_; }

  // "fcontext" or "ucontext": what switches (for messages and tests).
  static const char* Switcher();

 private:
  struct Context;
  static void Entry();
  // Leaves the running side (`from`; nullptr: the host thread's stack) for
  // `to` (nullptr: the host thread's stack); returns when a switch comes
  // back to `from`, unless `from` finished.
  static void Switch(Fiber* from, Fiber* to);

  Main main_;
  void* arg_;
  bool finished_ = false;
  std::unique_ptr<Context> context_;
};

}  // namespace sparsetir
