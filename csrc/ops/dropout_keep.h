// Which elements a dropout keeps: a counter-based generator (Philox4x32-10,
// Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011),
// so that element e's draw depends on (seed, e) alone. A chunk of elements
// can then be drawn by any thread, at any instruction-set level, in any
// order, and the backward draws the forward's mask again instead of keeping
// it: the same seed gives the same elements at 1 or 16 threads, and with
// the kernels of every level.
//
// Layout: elements come in blocks of 64. Element e of block b is word
// (e / 16) % 4 of the Philox output for counter 16 b + e % 16, so that one
// call over 16 consecutive counters gives 64 consecutive elements, word
// after word, with no shuffle between the generator's lanes and memory.
#pragma once

#include <cstdint>
#include <string>

namespace sparsetir::ops::dropout {

constexpr int64_t kBlock = 64;    // elements per 16 Philox counters
constexpr int64_t kChunk = 4096;  // elements per task of the parallel loop (a multiple of kBlock)

// keep[i] = 1 if element first + i is kept, for i < count; `first` and
// `count` are multiples of kBlock. An element is dropped where its 32-bit
// draw is below `threshold` (= p * 2^32, rounded; at most 2^32 - 1: p = 1
// never reaches the kernels).
using KeepFn = void (*)(uint64_t seed, int64_t first, int64_t count, uint32_t threshold, uint8_t* keep);
// y[i] = x[i] * (element first + i kept ? scale : 0) for i < count, the mask
// drawn as KeepFn draws it but kept in registers; same multiples of kBlock.
// bfloat16 and float16 come as their bit patterns (the loops see no torch
// type), scaled in float32 and rounded once to nearest even.
template <typename T, typename Scale = T>
using ScaleFn = void (*)(const T* x, T* y, uint64_t seed, int64_t first, int64_t count, uint32_t threshold,
                         Scale scale);

struct Kernels {
  KeepFn keep;
  ScaleFn<float> scale_float;
  ScaleFn<double> scale_double;
  ScaleFn<uint16_t, float> scale_bf16;
  ScaleFn<uint16_t, float> scale_half;
};

// The same loops built for each x86-64 level (SSE2 = the generic level; the
// only choice off x86-64): those of the level the kernels are built for
// (Target::HostCpu(): this CPU's, or $SPARSETIR_CPU_ISA's).
const Kernels& KernelsFor(const std::string& level);

// The four 32-bit words Philox4x32-10 gives for a 128-bit counter and a
// 64-bit key: the known-answer tests of the generator check this.
void Philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

}  // namespace sparsetir::ops::dropout
