// The SIMT emulator: what a generated CUDA source needs to compile with the
// host C++ compiler and run on the CPU, unchanged. It is pasted before the CUDA
// prelude; the code generator appends an entry (sparsetir_main, the CPU ABI)
// that runs the grid: blocks spread over the host's threads through the
// launcher, the threads of a block one after another on the thread that runs
// the block.
//
// Running a block's threads one after another is exact for kernels whose
// threads exchange no data inside a block (every recipe of this version: each
// thread owns its outputs; atomics between blocks are real atomics here). A
// kernel that synchronizes (__syncthreads, warp shuffles) needs its threads to
// run as fibers that meet at the barrier; this emulator refuses such a kernel
// with an error naming the call instead of running it wrongly.
//
// Race check: with SPARSETIR_EMULATE_ORDER=reverse the threads of each block
// and the blocks of each launcher task run in reverse order; a kernel whose
// output changes with the order has a race between its threads.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtEmulatorHeader = R"EMULATOR(
#define SPARSETIR_EMULATE 1
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>

struct sparsetir_uint3 { unsigned int x, y, z; };
static thread_local sparsetir_uint3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define SPARSETIR_DEVICE static inline
#define SPARSETIR_DEVICE_MEMBER inline

static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }

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
static inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline unsigned int atomicCAS(unsigned int* p, unsigned int expected, unsigned int desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}

[[noreturn]] static inline void sparsetir_emulator_unsupported(const char* what) {
  fprintf(stderr, "sparsetir SIMT emulator: %s needs threads that run as fibers; this emulator runs a block's "
                  "threads one after another and cannot run it\n", what);
  abort();
}
static inline void __syncthreads() { sparsetir_emulator_unsupported("__syncthreads"); }
static inline void __syncwarp(unsigned = 0xffffffffu) { sparsetir_emulator_unsupported("__syncwarp"); }

static inline bool sparsetir_emulate_reversed() {
  static const bool reversed = [] {
    const char* order = getenv("SPARSETIR_EMULATE_ORDER");
    return order && strcmp(order, "reverse") == 0;
  }();
  return reversed;
}

// Runs blocks [begin, end) of the grid, each block's threads in turn.
template <typename Body>
static inline void sparsetir_emulate_blocks(sparsetir_uint3 grid, sparsetir_uint3 block, int64_t begin, int64_t end,
                                            const Body& body) {
  const bool reversed = sparsetir_emulate_reversed();
  gridDim = grid;
  blockDim = block;
  const int64_t threads = (int64_t)block.x * block.y * block.z;
  for (int64_t b = begin; b < end; ++b) {
    const int64_t linear_block = reversed ? end - 1 - (b - begin) : b;
    blockIdx = {(unsigned)(linear_block % grid.x), (unsigned)(linear_block / grid.x % grid.y),
                (unsigned)(linear_block / ((int64_t)grid.x * grid.y))};
    for (int64_t t = 0; t < threads; ++t) {
      const int64_t linear = reversed ? threads - 1 - t : t;
      threadIdx = {(unsigned)(linear % block.x), (unsigned)(linear / block.x % block.y),
                   (unsigned)(linear / ((int64_t)block.x * block.y))};
      body();
    }
  }
}
)EMULATOR";

}  // namespace sparsetir
