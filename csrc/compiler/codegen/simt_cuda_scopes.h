// What libcu++'s headers share, for the emulator's cuda/barrier,
// cuda/pipeline and cuda/atomic: cuda::thread_scope, cuda::std::memory_order
// (also as cuda::memory_order) and cuda::std::move. Pasted once, before any
// of them.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtCudaScopes = R"LIBRARY(
#include <stddef.h>
#include <algorithm>
#include <type_traits>
#include <utility>
namespace cuda {
enum thread_scope { thread_scope_system, thread_scope_device, thread_scope_block, thread_scope_thread };
namespace std {
using ::std::move;
// The host compiler's orders: every emulated atomic is the host's.
enum memory_order {
  memory_order_relaxed = __ATOMIC_RELAXED,
  memory_order_consume = __ATOMIC_CONSUME,
  memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE,
  memory_order_acq_rel = __ATOMIC_ACQ_REL,
  memory_order_seq_cst = __ATOMIC_SEQ_CST
};
}  // namespace std
using std::memory_order;
using std::memory_order_relaxed;
using std::memory_order_consume;
using std::memory_order_acquire;
using std::memory_order_release;
using std::memory_order_acq_rel;
using std::memory_order_seq_cst;
}  // namespace cuda
)LIBRARY";

}  // namespace sparsetir
