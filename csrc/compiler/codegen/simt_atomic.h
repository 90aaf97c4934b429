// cuda/std/atomic and cuda/atomic for hand-written kernels under the SIMT
// emulator, pasted after simt_cuda_scopes.h: cuda::std::atomic_ref and
// cuda::std::atomic with load, store, exchange, compare_exchange_weak /
// _strong, fetch_add / _sub for integers and floats, fetch_and / _or / _xor
// for integers and the operators (kSimtStdAtomic), and cuda/atomic's
// cuda::atomic_ref and cuda::atomic of a thread scope, which add fetch_min /
// fetch_max (kSimtAtomic), as libcu++ has them.
//
// Every operation is the host compiler's __atomic builtin with the order
// asked for (float additions, minima and maxima a compare-and-swap loop), so
// the blocks that other host threads run at the same time see it as the
// GPU's other blocks would; a block's own threads are fibers of one host
// thread and never interleave inside one.
//
// A look at the value that may be a spin's (a load, a failed compare-and-
// swap, an operation that changes nothing) is a spin point: the block's
// other threads run before its thread goes on (simt_abi.h). wait() spins
// until the value changes, so notify_one / notify_all have nothing to do.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtStdAtomic = R"LIBRARY(
namespace cuda {
// The failure order compare_exchange uses when given one order.
static inline memory_order sparsetir_failure_order(memory_order order) {
  return order == memory_order_acq_rel ? memory_order_acquire
         : order == memory_order_release ? memory_order_relaxed
                                         : order;
}

// cuda::std::atomic_ref<T>'s operations on an object (cuda::atomic_ref
// adds fetch_min and fetch_max).
template <typename T> class sparsetir_atomic_ref {
  static_assert(::std::is_trivially_copyable<T>::value && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 ||
                                                           sizeof(T) == 8),
                "cuda::atomic_ref of a type of 1, 2, 4 or 8 bytes");
 public:
  static constexpr bool kInteger = ::std::is_integral<T>::value && !::std::is_same<T, bool>::value;
  static constexpr bool kArithmetic = kInteger || ::std::is_floating_point<T>::value;
  typedef T value_type;
  static constexpr bool is_always_lock_free = true;
  explicit sparsetir_atomic_ref(T& object) : p_(&object) {}

  // A load is a spin point (a spin's look at the value): the block's other
  // threads run first, so that it reads what they wrote meanwhile.
  T load(memory_order order = memory_order_seq_cst) const {
    sparsetir_spin("a cuda::atomic load", p_, sparsetir_weak_look);
    return raw_load(order);
  }
  void store(T v, memory_order order = memory_order_seq_cst) const { __atomic_store(p_, &v, order); }
  T exchange(T v, memory_order order = memory_order_seq_cst) const {
    T old;
    __atomic_exchange(p_, &v, &old, order);
    if (memcmp(&old, &v, sizeof(T)) == 0) {
      sparsetir_spin("a cuda::atomic exchange that changed nothing", p_, sparsetir_strong_look);
    }
    return old;
  }
  bool compare_exchange_strong(T& expected, T desired, memory_order success, memory_order failure) const {
    if (__atomic_compare_exchange(p_, &expected, &desired, false, success, failure)) return true;
    sparsetir_spin("a failed cuda::atomic compare_exchange", p_, sparsetir_strong_look);
    return false;
  }
  bool compare_exchange_strong(T& expected, T desired, memory_order order = memory_order_seq_cst) const {
    return compare_exchange_strong(expected, desired, order, sparsetir_failure_order(order));
  }
  // Never fails spuriously here, which a weak exchange may or may not do.
  bool compare_exchange_weak(T& expected, T desired, memory_order success, memory_order failure) const {
    return compare_exchange_strong(expected, desired, success, failure);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order order = memory_order_seq_cst) const {
    return compare_exchange_strong(expected, desired, order);
  }

  T fetch_add(T v, memory_order order = memory_order_seq_cst) const {
    static_assert(kArithmetic, "fetch_add of an integer or a floating-point type");
    if constexpr (kInteger) {
      return sparsetir_spin_if_zero(p_, __atomic_fetch_add(p_, v, order), v, "a cuda::atomic fetch_add of 0");
    } else {
      return update([v](T old) { return old + v; }, order);
    }
  }
  T fetch_sub(T v, memory_order order = memory_order_seq_cst) const {
    static_assert(kArithmetic, "fetch_sub of an integer or a floating-point type");
    if constexpr (kInteger) {
      return sparsetir_spin_if_zero(p_, __atomic_fetch_sub(p_, v, order), v, "a cuda::atomic fetch_sub of 0");
    } else {
      return update([v](T old) { return old - v; }, order);
    }
  }
  T fetch_and(T v, memory_order order = memory_order_seq_cst) const {
    static_assert(kInteger, "fetch_and of an integer type");
    return sparsetir_spin_if_zero(p_, __atomic_fetch_and(p_, v, order), T(~v), "a cuda::atomic fetch_and of all ones");
  }
  T fetch_or(T v, memory_order order = memory_order_seq_cst) const {
    static_assert(kInteger, "fetch_or of an integer type");
    return sparsetir_spin_if_zero(p_, __atomic_fetch_or(p_, v, order), v, "a cuda::atomic fetch_or of 0");
  }
  T fetch_xor(T v, memory_order order = memory_order_seq_cst) const {
    static_assert(kInteger, "fetch_xor of an integer type");
    return sparsetir_spin_if_zero(p_, __atomic_fetch_xor(p_, v, order), v, "a cuda::atomic fetch_xor of 0");
  }
  // Returns once the value differs from `old`: the waiting thread spins, and
  // the others run in turn; so a notification has nothing left to wake.
  void wait(T old, memory_order order = memory_order_seq_cst) const {
    for (;;) {
      const T now = raw_load(order);
      if (memcmp(&now, &old, sizeof(T)) != 0) return;
      sparsetir_spin("a cuda::atomic wait", p_, sparsetir_strong_look);
    }
  }
  void notify_one() const {}
  void notify_all() const {}

  operator T() const { return load(); }
  T operator=(T v) const {
    store(v);
    return v;
  }
  T operator++() const { return fetch_add(T(1)) + T(1); }
  T operator--() const { return fetch_sub(T(1)) - T(1); }
  T operator++(int) const { return fetch_add(T(1)); }
  T operator--(int) const { return fetch_sub(T(1)); }
  T operator+=(T v) const { return fetch_add(v) + v; }
  T operator-=(T v) const { return fetch_sub(v) - v; }
  T operator&=(T v) const { return fetch_and(v) & v; }
  T operator|=(T v) const { return fetch_or(v) | v; }
  T operator^=(T v) const { return fetch_xor(v) ^ v; }

 protected:
  T raw_load(memory_order order) const {
    typename ::std::remove_cv<T>::type v;  // atomic_ref<const T> loads too
    __atomic_load(p_, &v, order);
    return v;
  }
  // The value before `f` replaced it, by compare-and-swap.
  template <typename F> T update(F f, memory_order order) const {
    T old = raw_load(memory_order_relaxed);
    while (!compare_exchange_strong(old, f(old), order, memory_order_relaxed)) {
    }
    return old;
  }

  T* p_;
};

// An atomic object: Ref's operations on its own value.
template <typename T, typename Ref> class sparsetir_atomic {
 public:
  typedef T value_type;
  static constexpr bool is_always_lock_free = true;
  sparsetir_atomic() = default;  // trivial, as a __shared__ object's must be
  constexpr sparsetir_atomic(T v) : value_(v) {}
  sparsetir_atomic(const sparsetir_atomic&) = delete;
  sparsetir_atomic& operator=(const sparsetir_atomic&) = delete;

  T load(memory_order order = memory_order_seq_cst) const { return ref().load(order); }
  void store(T v, memory_order order = memory_order_seq_cst) { ref().store(v, order); }
  T exchange(T v, memory_order order = memory_order_seq_cst) { return ref().exchange(v, order); }
  bool compare_exchange_strong(T& expected, T desired, memory_order success, memory_order failure) {
    return ref().compare_exchange_strong(expected, desired, success, failure);
  }
  bool compare_exchange_strong(T& expected, T desired, memory_order order = memory_order_seq_cst) {
    return ref().compare_exchange_strong(expected, desired, order);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order success, memory_order failure) {
    return ref().compare_exchange_weak(expected, desired, success, failure);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order order = memory_order_seq_cst) {
    return ref().compare_exchange_weak(expected, desired, order);
  }
  T fetch_add(T v, memory_order order = memory_order_seq_cst) { return ref().fetch_add(v, order); }
  T fetch_sub(T v, memory_order order = memory_order_seq_cst) { return ref().fetch_sub(v, order); }
  T fetch_and(T v, memory_order order = memory_order_seq_cst) { return ref().fetch_and(v, order); }
  T fetch_or(T v, memory_order order = memory_order_seq_cst) { return ref().fetch_or(v, order); }
  T fetch_xor(T v, memory_order order = memory_order_seq_cst) { return ref().fetch_xor(v, order); }
  void wait(T old, memory_order order = memory_order_seq_cst) const { ref().wait(old, order); }
  void notify_one() {}
  void notify_all() {}

  operator T() const { return load(); }
  T operator=(T v) {
    store(v);
    return v;
  }
  T operator++() { return ++ref(); }
  T operator--() { return --ref(); }
  T operator++(int) { return ref()++; }
  T operator--(int) { return ref()--; }
  T operator+=(T v) { return ref() += v; }
  T operator-=(T v) { return ref() -= v; }
  T operator&=(T v) { return ref() &= v; }
  T operator|=(T v) { return ref() |= v; }
  T operator^=(T v) { return ref() ^= v; }

 protected:
  Ref ref() const { return Ref(const_cast<T&>(value_)); }

 private:
  T value_;
};

namespace std {
template <typename T> struct atomic_ref : sparsetir_atomic_ref<T> {
  explicit atomic_ref(T& object) : sparsetir_atomic_ref<T>(object) {}
  using sparsetir_atomic_ref<T>::operator=;
};
template <typename T> struct atomic : sparsetir_atomic<T, atomic_ref<T>> {
  using sparsetir_atomic<T, atomic_ref<T>>::sparsetir_atomic;
  using sparsetir_atomic<T, atomic_ref<T>>::operator=;
};
static inline void atomic_thread_fence(memory_order order) { __atomic_thread_fence(order); }
}  // namespace std
}  // namespace cuda
)LIBRARY";

// cuda/atomic beyond cuda/std/atomic (pasted after kSimtStdAtomic): the
// forms of a thread scope, with libcu++'s fetch_min and fetch_max.
inline constexpr const char* kSimtAtomic = R"LIBRARY(
namespace cuda {
template <typename T, thread_scope Scope = thread_scope_system> struct atomic_ref : sparsetir_atomic_ref<T> {
  explicit atomic_ref(T& object) : sparsetir_atomic_ref<T>(object) {}
  using sparsetir_atomic_ref<T>::operator=;
  T fetch_min(T v, memory_order order = memory_order_seq_cst) const {
    static_assert(sparsetir_atomic_ref<T>::kArithmetic, "fetch_min of an integer or a floating-point type");
    return this->update([v](T old) { return v < old ? v : old; }, order);
  }
  T fetch_max(T v, memory_order order = memory_order_seq_cst) const {
    static_assert(sparsetir_atomic_ref<T>::kArithmetic, "fetch_max of an integer or a floating-point type");
    return this->update([v](T old) { return old < v ? v : old; }, order);
  }
};
template <typename T, thread_scope Scope = thread_scope_system>
struct atomic : sparsetir_atomic<T, atomic_ref<T, Scope>> {
  using sparsetir_atomic<T, atomic_ref<T, Scope>>::sparsetir_atomic;
  using sparsetir_atomic<T, atomic_ref<T, Scope>>::operator=;
  T fetch_min(T v, memory_order order = memory_order_seq_cst) { return this->ref().fetch_min(v, order); }
  T fetch_max(T v, memory_order order = memory_order_seq_cst) { return this->ref().fetch_max(v, order); }
};
static inline void atomic_thread_fence(memory_order order, thread_scope = thread_scope_system) {
  __atomic_thread_fence(order);
}
}  // namespace cuda
)LIBRARY";

}  // namespace sparsetir
