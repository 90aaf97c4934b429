// The SIMT emulator: what a generated CUDA source needs to compile with the
// host C++ compiler and run on the CPU, unchanged. It is pasted before the CUDA
// prelude, and SimtEmulatorEntry() after the kernel: an entry with the CPU ABI
// (sparsetir_main) that runs the grid, its blocks spread over the host's
// threads by the launcher.
//
// The threads of a block run through the emulator's runtime (simt_abi.h,
// runtime/simt_scheduler.h): as fibers that meet at __syncthreads,
// __syncwarp and the warp operations, and take turns at spin points, when
// the kernel uses any of them (KernelSynchronizes), else one after another,
// which is exact and cheaper for threads that exchange no data. __shared__ variables are thread_local:
// a host thread runs one block at a time, and its fibers share them.
// Warp operations pass their values to the runtime, which hands each lane
// what it asked for as the lanes meet: one warp barrier per operation.
//
// Race check: SPARSETIR_EMULATE_ORDER=reverse or shuffle runs the threads of
// each block (and the blocks of each host task) in that order; a kernel whose
// output changes with the order has a race between its threads.
#pragma once

#include <string>
#include <vector>

#include "codegen/abi.h"
#include "codegen/simt_abi.h"
#include "codegen/simt_device_library.h"
#include "codegen/simt_device_math.h"
#include "codegen/simt_directed_rounding.h"

namespace sparsetir {

inline const std::string kSimtEmulatorHeader = R"EMULATOR(
#define SPARSETIR_EMULATE 1
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
)EMULATOR" + std::string(kSimtAbiText) + "\n" + std::string(kSimtDeviceLibrary) +
                                            std::string(kSimtDeviceMath) + std::string(kSimtDirectedRounding) +
                                            R"EMULATOR(
typedef uint3 sparsetir_uint3;
static thread_local uint3 threadIdx, blockIdx;
static thread_local dim3 blockDim, gridDim;
static thread_local const SparsetirSimt* sparsetir_simt;  // the launch this host thread runs blocks of
// Counts the blocks this host thread has started: shared state (a
// cuda::barrier) that records the block that initialized it tells a stale
// one, left by an earlier block in the same thread-local storage.
static thread_local uint64_t sparsetir_block_serial;
enum { warpSize = 32 };

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static thread_local
#define __align__(n) __attribute__((aligned(n)))
#define SPARSETIR_DEVICE static inline
#define SPARSETIR_DEVICE_MEMBER inline
// Dynamic shared memory: `extern __shared__ T name[]` on the device. The
// block's buffer is the host thread's, the same for every launch it runs, so
// a hand-written kernel's `extern __shared__ T name[];` becomes a
// thread-local reference bound to it once (EmulatorSourceFromCuda).
static inline void* sparsetir_dynamic_shared() { return sparsetir_simt->dynamic_shared(sparsetir_simt->ctx); }
#define SPARSETIR_DYNAMIC_SHARED(T, name) T* name = (T*)sparsetir_dynamic_shared()

static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }

// A spin point (simt_abi.h): an operation that may be a spin's look at a
// value another thread writes lets the block's other threads run before its
// thread goes on, since fibers switch only where the kernel lets them. A
// strong look (a failed compare-and-swap, an atomic that changed nothing,
// __nanosleep) always does; a weak one (an atomic load, a fence), which
// plain code makes too, where it looks again at the address of the last weak
// look, and else once in sparsetir_looks_per_turn: both told here, so that
// the other looks cost no call.
enum { sparsetir_weak_look = 0, sparsetir_strong_look = 1 };
static inline void sparsetir_spin(const char* what, const volatile void* address, int strong);
// An atomic that left the value as it was: a read, perhaps a spin's.
template <typename T> static inline T sparsetir_spin_if_same(const volatile void* p, T old, T now, const char* what) {
  if (old == now) sparsetir_spin(what, p, sparsetir_strong_look);
  return old;
}
template <typename T> static inline T sparsetir_spin_if_zero(const volatile void* p, T old, T v, const char* what) {
  if (v == 0) sparsetir_spin(what, p, sparsetir_strong_look);
  return old;
}

// Atomics: the host's, as blocks run on several threads.
// A floating-point add as a compare-and-swap loop on the value's bits.
template <typename T, typename Bits> static inline T sparsetir_emulated_atomic_add(T* p, T v) {
  Bits* bits = (Bits*)p;
  Bits old = __atomic_load_n(bits, __ATOMIC_RELAXED), next;
  T value;
  do {
    memcpy(&value, &old, sizeof(T));
    T sum = value + v;
    memcpy(&next, &sum, sizeof(T));
  } while (!__atomic_compare_exchange_n(bits, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return value;
}
static inline float atomicAdd(float* p, float v) { return sparsetir_emulated_atomic_add<float, uint32_t>(p, v); }
static inline double atomicAdd(double* p, double v) { return sparsetir_emulated_atomic_add<double, uint64_t>(p, v); }
static inline int atomicAdd(int* p, int v) {
  return sparsetir_spin_if_zero(p, __atomic_fetch_add(p, v, __ATOMIC_RELAXED), v, "atomicAdd of 0");
}
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) {
  return sparsetir_spin_if_zero(p, __atomic_fetch_add(p, v, __ATOMIC_RELAXED), v, "atomicAdd of 0");
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return sparsetir_spin_if_zero(p, __atomic_fetch_add(p, v, __ATOMIC_RELAXED), v, "atomicAdd of 0");
}
static inline int atomicSub(int* p, int v) {
  return sparsetir_spin_if_zero(p, __atomic_fetch_sub(p, v, __ATOMIC_RELAXED), v, "atomicSub of 0");
}
static inline int atomicExch(int* p, int v) {
  return sparsetir_spin_if_same(p, __atomic_exchange_n(p, v, __ATOMIC_RELAXED), v,
                                "an atomicExch that changed nothing");
}
static inline unsigned int atomicExch(unsigned int* p, unsigned int v) {
  return sparsetir_spin_if_same(p, __atomic_exchange_n(p, v, __ATOMIC_RELAXED), v,
                                "an atomicExch that changed nothing");
}
template <typename T> static inline T sparsetir_emulated_atomic_extremum(T* p, T v, bool max) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while ((max ? v > old : v < old) &&
         !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline int atomicMax(int* p, int v) { return sparsetir_emulated_atomic_extremum(p, v, true); }
static inline int atomicMin(int* p, int v) { return sparsetir_emulated_atomic_extremum(p, v, false); }
static inline unsigned int atomicMax(unsigned int* p, unsigned int v) { return sparsetir_emulated_atomic_extremum(p, v, true); }
static inline unsigned int atomicMin(unsigned int* p, unsigned int v) { return sparsetir_emulated_atomic_extremum(p, v, false); }
template <typename T> static inline T sparsetir_emulated_atomic_cas(T* p, T expected, T desired) {
  if (!__atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    sparsetir_spin("a failed atomicCAS", p, sparsetir_strong_look);
  }
  return expected;
}
static inline unsigned int atomicCAS(unsigned int* p, unsigned int expected, unsigned int desired) {
  return sparsetir_emulated_atomic_cas(p, expected, desired);
}
static inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected, unsigned long long desired) {
  return sparsetir_emulated_atomic_cas(p, expected, desired);
}
// A fence is a spin point: a spin may read plain memory between fences.
static inline void __threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  sparsetir_spin("__threadfence", nullptr, sparsetir_weak_look);
}
static inline void __threadfence_block() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  sparsetir_spin("__threadfence_block", nullptr, sparsetir_weak_look);
}

)EMULATOR" + std::string(kSimtDeviceAtomics) + R"EMULATOR(
// Barriers: the runtime suspends the calling fiber until its group arrives.
static inline void __syncthreads() { sparsetir_simt->sync_block(sparsetir_simt->ctx); }
// The block's votes: over the threads that have not returned.
static inline int __syncthreads_count(int predicate) {
  int32_t threads;
  return sparsetir_simt->vote_block(sparsetir_simt->ctx, predicate, &threads);
}
static inline int __syncthreads_and(int predicate) {
  int32_t threads;
  return sparsetir_simt->vote_block(sparsetir_simt->ctx, predicate, &threads) == threads;
}
static inline int __syncthreads_or(int predicate) {
  int32_t threads;
  return sparsetir_simt->vote_block(sparsetir_simt->ctx, predicate, &threads) != 0;
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) { sparsetir_simt->sync_warp(sparsetir_simt->ctx, mask); }

static inline int64_t sparsetir_thread_rank() {
  return threadIdx.x + (int64_t)blockDim.x * (threadIdx.y + (int64_t)blockDim.y * threadIdx.z);
}

// The value `src` (a rank in the block) passed to the same warp operation;
// v where `src` is no thread of the block. The runtime reads every lane's
// value as the lanes meet, so no lane can overwrite one another has yet to read.
template <typename T> static inline T sparsetir_exchange(unsigned mask, T v, int64_t src) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "a warp shuffle moves at most 8 bytes");
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  bits = sparsetir_simt->shuffle_warp(sparsetir_simt->ctx, mask, bits, src);
  T r;
  memcpy(&r, &bits, sizeof(T));
  return r;
}
// The lanes of the caller's warp, relative to its first thread.
static inline int sparsetir_lane() { return (int)(sparsetir_thread_rank() % warpSize); }
static inline int64_t sparsetir_warp_base() { return sparsetir_thread_rank() - sparsetir_lane(); }

template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize) {
  const int lane = sparsetir_lane();
  return sparsetir_exchange(mask, v, sparsetir_warp_base() + lane / width * width + (src_lane & (width - 1)));
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  const int lane = sparsetir_lane();
  return sparsetir_exchange(mask, v, sparsetir_thread_rank() - ((lane % width) >= (int)delta ? (int)delta : 0));
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  const int lane = sparsetir_lane();
  return sparsetir_exchange(mask, v, sparsetir_thread_rank() + ((lane % width) + (int)delta < width ? (int)delta : 0));
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
  const int lane = sparsetir_lane();
  const int src = lane ^ lane_mask;
  // A lane of a later group of `width` keeps its own value.
  return sparsetir_exchange(mask, v, sparsetir_warp_base() + (src >= (lane / width + 1) * width ? lane : src));
}

// The predicates of the lanes that take part; *lanes gets who they are.
static inline unsigned sparsetir_vote(unsigned mask, int predicate, unsigned* lanes) {
  return sparsetir_simt->vote_warp(sparsetir_simt->ctx, mask, predicate != 0, lanes);
}
static inline unsigned __ballot_sync(unsigned mask, int predicate) {
  unsigned lanes;
  return sparsetir_vote(mask, predicate, &lanes);
}
static inline int __any_sync(unsigned mask, int predicate) {
  unsigned lanes;
  return sparsetir_vote(mask, predicate, &lanes) != 0;
}
static inline int __all_sync(unsigned mask, int predicate) {
  unsigned lanes;
  return sparsetir_vote(mask, predicate, &lanes) == lanes;
}

// The lanes of the caller's warp that had not returned when the warp last
// met (or began): every lane between two meetings sees the same mask. Threads
// that run one after another, without fibers: every lane of the warp in the
// block.
static inline unsigned __activemask() {
  if (sparsetir_simt->cooperative) return sparsetir_simt->live_lanes(sparsetir_simt->ctx);
  const int64_t threads = (int64_t)blockDim.x * blockDim.y * blockDim.z, left = threads - sparsetir_warp_base();
  return left >= warpSize ? 0xffffffffu : (1u << left) - 1u;
}

// __match_*_sync and __reduce_*_sync: each lane reads every lane of the mask
// (one shuffle each, in the same order in every lane).
template <typename T> static inline unsigned __match_any_sync(unsigned mask, T v) {
  unsigned same = 0;
  for (int lane = 0; lane < warpSize; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    const T other = sparsetir_exchange(mask, v, sparsetir_warp_base() + lane);
    if (memcmp(&other, &v, sizeof(T)) == 0) same |= 1u << lane;
  }
  return same;
}
template <typename T> static inline unsigned __match_all_sync(unsigned mask, T v, int* predicate) {
  const bool all = (__match_any_sync(mask, v) & mask) == mask;
  *predicate = all;
  return all ? mask : 0u;
}
template <typename T, typename Op> static inline T sparsetir_reduce_lanes(unsigned mask, T v, Op op) {
  bool first = true;
  T r = v;
  for (int lane = 0; lane < warpSize; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    const T other = sparsetir_exchange(mask, v, sparsetir_warp_base() + lane);
    r = first ? other : op(r, other);
    first = false;
  }
  return r;
}
#define SPARSETIR_REDUCE(name, T, expr) \
  static inline T name(unsigned mask, T v) { return sparsetir_reduce_lanes(mask, v, [](T a, T b) { return expr; }); }
SPARSETIR_REDUCE(__reduce_add_sync, int, (int)((unsigned)a + (unsigned)b))
SPARSETIR_REDUCE(__reduce_add_sync, unsigned, a + b)
SPARSETIR_REDUCE(__reduce_min_sync, int, a < b ? a : b)
SPARSETIR_REDUCE(__reduce_min_sync, unsigned, a < b ? a : b)
SPARSETIR_REDUCE(__reduce_max_sync, int, a > b ? a : b)
SPARSETIR_REDUCE(__reduce_max_sync, unsigned, a > b ? a : b)
SPARSETIR_REDUCE(__reduce_and_sync, unsigned, a & b)
SPARSETIR_REDUCE(__reduce_or_sync, unsigned, a | b)
SPARSETIR_REDUCE(__reduce_xor_sync, unsigned, a ^ b)
#undef SPARSETIR_REDUCE

// A thread that traps (__trap, a failed assert) fails the launch with where
// and why, and returns: its main catches what it throws. Other threads run
// on; the launch raises the error when it ends.
struct sparsetir_trapped {};
static inline void sparsetir_trap(const char* why) {
  char message[768];
  snprintf(message, sizeof(message), "block (%u, %u, %u), thread (%u, %u, %u): %s", blockIdx.x, blockIdx.y,
           blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, why);
  sparsetir_simt->trap(sparsetir_simt->ctx, message);
  throw sparsetir_trapped();
}
static inline void __trap() { sparsetir_trap("__trap()"); }
// A struct or vector argument (a tuple, list or dict in Python): its bytes
// as the parameter lays them out, behind their count; converts to the
// parameter's type, whatever it is, checking that the sizes agree.
struct sparsetir_struct_arg {
  const void* p;
  template <typename T> operator T() const {
    uint64_t bytes;
    memcpy(&bytes, p, sizeof(bytes));
    if (bytes != sizeof(T)) {
      char why[160];
      snprintf(why, sizeof(why), "a struct argument of %llu bytes reached a parameter of %zu bytes",
               (unsigned long long)bytes, sizeof(T));
      sparsetir_trap(why);
    }
    alignas(T) unsigned char raw[sizeof(T)];
    memcpy(raw, (const unsigned char*)p + sizeof(bytes), sizeof(T));
    return *reinterpret_cast<const T*>(raw);
  }
};

// A thread whose launch failed while it spun stops, as a trapped one does.
enum { sparsetir_looks_per_turn = 256 };
// The block's weak looks (its threads are fibers of this host thread): the
// last one's address and how many. A thread runs on without a switch until
// it waits, so the look before its own is its own unless it just resumed.
static thread_local struct {
  const volatile void* last;
  unsigned count;
} sparsetir_weak_looks;
static inline void sparsetir_spin(const char* what, const volatile void* address, int strong) {
  if (!strong) {
    auto& looks = sparsetir_weak_looks;
    const bool again = address && looks.last == address;
    looks.last = address;
    if (!again && ++looks.count % sparsetir_looks_per_turn != 0) return;
  }
  if (sparsetir_simt->spin(sparsetir_simt->ctx, what, (const void*)address)) throw sparsetir_trapped();
}
static inline void sparsetir_assert_failed(const char* expression, const char* file, int line) {
  char why[512];
  snprintf(why, sizeof(why), "assertion '%s' failed (%s:%d)", expression, file, line);
  sparsetir_trap(why);
}
#undef assert
#define assert(e) ((e) ? (void)0 : sparsetir_assert_failed(#e, __FILE__, __LINE__))

// Runs blocks [begin, end) of the grid (linear, x fastest), each through the
// runtime; stops at the first block that fails (the launch keeps why).
template <typename Body>
static inline void sparsetir_emulate_blocks(const SparsetirSimt* simt, sparsetir_uint3 grid, sparsetir_uint3 block,
                                            int64_t begin, int64_t end, Body& body) {
  sparsetir_simt = simt;
  gridDim = grid;
  blockDim = block;
  const int64_t threads = (int64_t)block.x * block.y * block.z;
  // threadIdx of each rank, divided out once here rather than at every switch
  // to a thread (the runtime refuses a block of more than 1024 threads).
  static thread_local sparsetir_uint3 thread_index[1024];
  for (int64_t rank = 0; rank < threads && rank < 1024; ++rank) {
    const unsigned r = (unsigned)rank, plane = block.x * block.y;
    thread_index[rank] = {r % block.x, r % plane / block.x, r / plane};
  }
  auto enter = [](void*, int64_t rank) { threadIdx = thread_index[rank]; };
  auto main = [](void* closure, int64_t) {
    try {
      (*static_cast<Body*>(closure))();
    } catch (const sparsetir_trapped&) {
    }
  };
  for (int64_t b = begin; b < end; ++b) {
    const int64_t linear_block = simt->order ? end - 1 - (b - begin) : b;
    blockIdx = {(unsigned)(linear_block % grid.x), (unsigned)(linear_block / grid.x % grid.y),
                (unsigned)(linear_block / ((int64_t)grid.x * grid.y))};
    ++sparsetir_block_serial;
    if (simt->run_block(simt->ctx, threads, blockIdx.x, blockIdx.y, blockIdx.z, enter, main, &body)) return;
  }
}
)EMULATOR";

// A hand-written CUDA source as the emulator compiles it, line for line (a
// compile error names the author's line): an #include of a CUDA runtime
// header (cuda_runtime.h, vector_types.h, cuda_fp16.h, ...) or of assert.h is
// dropped, as the emulator header (or EmulatorLibrariesFor) declares what it
// would; one of a header the emulator does not provide (cuda/std/chrono,
// cub/block/block_load.cuh, ...) becomes an #error naming it; `extern __shared__ T
// name[];` becomes a thread-local reference to the block's dynamic shared
// memory; `__shared__ alignas(n)` becomes `alignas(n) __shared__`.
std::string EmulatorSourceFromCuda(const std::string& source);

// What a hand-written source's CUDA headers declare beyond the emulator
// header, pasted after it (`text`): the 16-bit float types for cuda_fp16.h,
// cuda_bf16.h, mma.h and cuda_fp8.h (simt_float16_library.h;
// `float16_types`), the 8-bit float types for cuda_fp8.h
// (simt_float8_library.h; `float8_types`), the warp matrix functions for
// mma.h (simt_wmma.h), cooperative groups for cooperative_groups.h and its
// reduce.h, scan.h and memcpy_async.h (simt_cooperative_groups.h), the
// asynchronous copies of cuda_pipeline_primitives.h and cuda_pipeline.h
// (simt_async_copy.h), CUB's warp and block collectives for cub/cub.cuh and
// their headers, with cuda/functional's operators (simt_cub.h), and
// libcu++'s cuda::barrier (simt_barrier.h), cuda::pipeline
// (simt_pipeline.h), atomics (simt_atomic.h), latches and semaphores
// (simt_latch_semaphore.h) for cuda/barrier, cuda/pipeline, cuda/atomic,
// cuda/latch, cuda/semaphore and their cuda/std forms, after what they
// share (simt_cuda_scopes.h).
struct EmulatorLibraries {
  std::string text;
  bool float16_types = false;
  bool float8_types = false;  // cuda_fp8.h (simt_float8_library.h)
};
EmulatorLibraries EmulatorLibrariesFor(const std::string& source);

// True if a CUDA source names a barrier, a warp operation or a spin point
// (an atomic, a fence, __nanosleep): its threads must run as fibers.
bool KernelSynchronizes(const std::string& cuda_source);

// The parameter type SimtEmulatorEntry takes a struct or vector argument as:
// its bytes behind their count (sparsetir_struct_arg).
inline constexpr const char* kSimtStructArg = "sparsetir_struct_arg";

// The emulator's entry for the kernel `kernel`, whose parameters have the C
// types `param_types` ("float*", "const int64_t", ...): it takes the kernel's
// arguments as SparsetirArg (pointers as .ptr, "float" and "double" as .f64,
// other scalars as .i64, kSimtStructArg as .ptr), then the six
// launch dimensions (grid x, y, z, block x, y, z) and the launch's
// SparsetirSimt (.ptr).
std::string SimtEmulatorEntry(const std::string& kernel, const std::vector<std::string>& param_types);

}  // namespace sparsetir
