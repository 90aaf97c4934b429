// Helpers pasted at the top of every generated CUDA source. NVRTC has no
// headers, so the prelude declares what generated code needs itself (fixed-width
// integers, INFINITY / NAN, 16-bit float conversions, atomics for every width)
// with the same names as the CPU prelude, so that expressions print the same
// for both targets. Under the SIMT emulator (SPARSETIR_EMULATE, see
// simt_emulator.h) the host's headers provide the integers and macros, and the
// emulator provides threadIdx & co. and the CUDA atomics.
#pragma once

#include <string>

#include "codegen/prelude_float16.h"

namespace sparsetir {

inline const std::string kCudaPrelude = R"PRELUDE(
#ifndef SPARSETIR_EMULATE
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define SPARSETIR_DEVICE __device__ __forceinline__
#define SPARSETIR_DEVICE_MEMBER __device__ __forceinline__
#endif

// float16 / bfloat16: the GPU's conversions where it has them, else the
// portable ones of prelude_float16.h.
SPARSETIR_DEVICE float sparsetir_bits_to_float(uint32_t bits) { return __int_as_float((int)bits); }
SPARSETIR_DEVICE uint32_t sparsetir_float_to_bits(float f) { return (uint32_t)__float_as_int(f); }
#if defined(__CUDA_ARCH__)
#define SPARSETIR_HW_HALF
// On the device, the hardware conversions (one instruction each; bf16 needs
// sm_80, below which the portable versions further down are used).
SPARSETIR_DEVICE float sparsetir_half_to_float(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
SPARSETIR_DEVICE uint16_t sparsetir_float_to_half(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define SPARSETIR_HW_BF16
SPARSETIR_DEVICE uint16_t sparsetir_float_to_bf16(float f) {
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
)PRELUDE" + std::string(kFloat16Conversions) + R"PRELUDE(
// min / max give NaN when either operand is NaN (IEEE 754-2019 minimum / maximum).
template <typename T> SPARSETIR_DEVICE T sparsetir_min(T a, T b) { return (b < a || b != b) ? b : a; }
template <typename T> SPARSETIR_DEVICE T sparsetir_max(T a, T b) { return (a < b || b != b) ? b : a; }
// Integer division. A GPU gives an unspecified value for a zero divisor and
// wraps the smallest integer divided by -1; the host stops the process on both
// (SIGFPE), so under the emulator a zero divisor traps, naming it, and -1
// negates as the GPU does.
#ifdef SPARSETIR_EMULATE
template <typename T> static inline bool sparsetir_divisor_is_minus_one(T b) {
  if (b == 0) sparsetir_trap("an integer division or remainder by zero");
  return b == (T)-1;
}
#define SPARSETIR_NEGATED_IF_MINUS_ONE(a, b) \
  if (sparsetir_divisor_is_minus_one(b)) return (T)(0ULL - (unsigned long long)(a))
#define SPARSETIR_ZERO_IF_MINUS_ONE(b) if (sparsetir_divisor_is_minus_one(b)) return (T)0
#else
#define SPARSETIR_NEGATED_IF_MINUS_ONE(a, b)
#define SPARSETIR_ZERO_IF_MINUS_ONE(b)
#endif
template <typename T> SPARSETIR_DEVICE T sparsetir_truncdiv(T a, T b) {
  SPARSETIR_NEGATED_IF_MINUS_ONE(a, b);
  return a / b;
}
template <typename T> SPARSETIR_DEVICE T sparsetir_floordiv(T a, T b) {
  SPARSETIR_NEGATED_IF_MINUS_ONE(a, b);
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> SPARSETIR_DEVICE T sparsetir_floormod(T a, T b) {
  SPARSETIR_ZERO_IF_MINUS_ONE(b);
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> SPARSETIR_DEVICE T sparsetir_iabs(T a) { return a < 0 ? -a : a; }

// The vector accesses of a vectorized loop (vector_access.h): N elements moved
// by one instruction of up to 16 bytes (more: several), from an address that
// is a multiple of the vector's alignment (the launch checks the arguments).
template <typename T, int N> struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) sparsetir_vec { T v[N]; };
#ifdef SPARSETIR_EMULATE
// A GPU faults on a misaligned vector access ("misaligned address"); the
// emulator stops the process the same way rather than run on.
template <typename T, int N> static inline void sparsetir_check_vector_address(const void* p) {
  if ((uintptr_t)p % alignof(sparsetir_vec<T, N>) != 0) {
    fprintf(stderr, "sparsetir emulator: misaligned vector access of %d bytes at %p\n", (int)sizeof(T) * N, p);
    abort();
  }
}
#endif
template <typename T, int N> SPARSETIR_DEVICE sparsetir_vec<T, N> sparsetir_vload(const T* p) {
#ifdef SPARSETIR_EMULATE
  sparsetir_check_vector_address<T, N>(p);
  sparsetir_vec<T, N> v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
#else
  return *reinterpret_cast<const sparsetir_vec<T, N>*>(p);
#endif
}
template <typename T, int N> SPARSETIR_DEVICE void sparsetir_vstore(T* p, const sparsetir_vec<T, N>& v) {
#ifdef SPARSETIR_EMULATE
  sparsetir_check_vector_address<T, N>(p);
  __builtin_memcpy(p, &v, sizeof(v));
#else
  *reinterpret_cast<sparsetir_vec<T, N>*>(p) = v;
#endif
}
SPARSETIR_DEVICE float sparsetir_expf(float x) { return expf(x); }

// A reduction across lanes (lower_lane_reductions.h): v combined over the
// caller's group of `lanes` consecutive lanes (a power of two; blockDim.x is
// `lanes`, so a group lies in one warp) by a butterfly of shuffles, after
// which every lane holds the same bits (each step combines the same two
// values on both sides). The mask names the group only: a group that skips
// the reduction (a tail) holds no other group up.
struct SparsetirSum {
  template <typename T> SPARSETIR_DEVICE_MEMBER T operator()(T a, T b) const { return a + b; }
};
struct SparsetirMax {
  template <typename T> SPARSETIR_DEVICE_MEMBER T operator()(T a, T b) const { return sparsetir_max(a, b); }
};
struct SparsetirMin {
  template <typename T> SPARSETIR_DEVICE_MEMBER T operator()(T a, T b) const { return sparsetir_min(a, b); }
};
// The mask of the caller's group of `lanes` consecutive lanes of its warp.
SPARSETIR_DEVICE unsigned sparsetir_lane_group_mask(int lanes) {
  const unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned first = (rank & 31u) & ~(unsigned)(lanes - 1);
  return lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u) << first;
}
template <typename Op, typename T> SPARSETIR_DEVICE T sparsetir_lane_reduce(T v, int lanes) {
  const unsigned mask = sparsetir_lane_group_mask(lanes);
  for (int d = lanes / 2; d > 0; d /= 2) v = Op()(v, __shfl_xor_sync(mask, v, d, lanes));
  return v;
}

// The value of lane `source` of the caller's group of `lanes` consecutive
// lanes, given to every lane of the group (T.sp.lane_shuffle).
template <typename T> SPARSETIR_DEVICE T sparsetir_lane_shuffle(T v, int source, int lanes) {
  return __shfl_sync(sparsetir_lane_group_mask(lanes), v, source, lanes);
}

// The sum of a thread's L consecutive local elements (T.sp.horizontal_sum),
// halves first, in the order the cpu target's vector folds add them.
template <int L, typename T> SPARSETIR_DEVICE T sparsetir_horizontal_sum(const T* p) {
  if constexpr (L == 1) {
    return p[0];
  } else {
    T half[L / 2];
#pragma unroll
    for (int k = 0; k < L / 2; ++k) half[k] = p[k] + p[k + L / 2];
    return sparsetir_horizontal_sum<L / 2>(half);
  }
}

// A reduction across more than a warp (lower_lane_reductions.h): the group
// is the whole block (blockDim = (lanes, 1, 1), a multiple of 32). Each warp
// combines its lanes with the butterfly, its lane 0 publishes the warp's part
// in shared memory, and after a barrier every thread combines the parts in
// the same order, so every thread holds the same bits. The second barrier
// keeps the parts until all threads have read them: the next reduction of
// the same type writes them again.
template <typename Op, typename T> SPARSETIR_DEVICE T sparsetir_block_reduce(T v, int lanes) {
  __shared__ T parts[32];
  v = sparsetir_lane_reduce<Op>(v, 32);
  if ((threadIdx.x & 31u) == 0) parts[threadIdx.x >> 5] = v;
  __syncthreads();
  T whole = parts[0];
  for (int w = 1; w < lanes / 32; ++w) whole = Op()(whole, parts[w]);
  __syncthreads();
  return whole;
}

// Tensor cores (T.sp.mma_sync; lower_mma_fragments.h): a warp's
// acc += A * B for a 16 x 16 A (element (r, c) at a[r * a_rows + c * a_cols])
// and a 16 x 8 B (at b[r * b_rows + c * b_cols]), float16 or bfloat16, summed
// in float32.
// The PTX ISA's fragment layout: with g = lane / 4 and q = lane % 4, a lane
// holds acc (g, 2q), (g, 2q+1), (g+8, 2q), (g+8, 2q+1); A's pairs
// (g, 2q..2q+1), (g+8, 2q..2q+1), (g, 2q+8..2q+9), (g+8, 2q+8..2q+9); and
// B's pairs (2q..2q+1, g), (2q+8..2q+9, g), the lower index in the low half.
SPARSETIR_DEVICE uint32_t sparsetir_pack16(uint16_t low, uint16_t high) {
  return (uint32_t)low | ((uint32_t)high << 16);
}
template <bool kBf16> SPARSETIR_DEVICE float sparsetir_mma_operand(uint32_t pair, int high) {
  const uint16_t h = (uint16_t)(high ? pair >> 16 : pair & 0xffffu);
  return kBf16 ? sparsetir_bf16_to_float(h) : sparsetir_half_to_float(h);
}
// The instruction's product by warp shuffles, for the SIMT emulator and for
// GPUs before sm_80: for each pair of depths, a lane fetches its two rows of
// A from the lane of its group that holds them and its two columns of B from
// the lanes that hold those, then adds the products in depth order.
template <bool kBf16>
SPARSETIR_DEVICE void sparsetir_mma_by_shuffles(float* acc, const uint32_t* ra, const uint32_t* rb, unsigned lane) {
  const unsigned g = lane >> 2, q = lane & 3u;
  for (int k = 0; k < 16; k += 2) {
    const unsigned holder = (unsigned)(k & 7) >> 1;  // the q of the lanes holding depths k, k + 1
    const int half = k >> 3;                         // depths 8..15: A's registers 2, 3 and B's 1
    const uint32_t a_top = __shfl_sync(0xffffffffu, ra[2 * half], (int)(g * 4 + holder));
    const uint32_t a_bottom = __shfl_sync(0xffffffffu, ra[2 * half + 1], (int)(g * 4 + holder));
    const uint32_t b_even = __shfl_sync(0xffffffffu, rb[half], (int)(2 * q * 4 + holder));
    const uint32_t b_odd = __shfl_sync(0xffffffffu, rb[half], (int)((2 * q + 1) * 4 + holder));
    for (int d = 0; d < 2; ++d) {
      const float top = sparsetir_mma_operand<kBf16>(a_top, d), bottom = sparsetir_mma_operand<kBf16>(a_bottom, d);
      const float even = sparsetir_mma_operand<kBf16>(b_even, d), odd = sparsetir_mma_operand<kBf16>(b_odd, d);
      acc[0] += top * even;
      acc[1] += top * odd;
      acc[2] += bottom * even;
      acc[3] += bottom * odd;
    }
  }
}
template <bool kBf16>
SPARSETIR_DEVICE void sparsetir_mma_m16n8k16(float* acc, const uint16_t* a, int64_t a_rows, int64_t a_cols,
                                             const uint16_t* b, int64_t b_rows, int64_t b_cols) {
  const unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
  const unsigned g = lane >> 2, q = lane & 3u;
  // A's rows g and g + 8 from column 2q; B's column g from row 2q.
  const uint16_t* top = a + (int64_t)g * a_rows + (int64_t)(2 * q) * a_cols;
  const uint16_t* bottom = top + 8 * a_rows;
  uint32_t ra[4], rb[2];
  ra[0] = sparsetir_pack16(top[0], top[a_cols]);
  ra[1] = sparsetir_pack16(bottom[0], bottom[a_cols]);
  ra[2] = sparsetir_pack16(top[8 * a_cols], top[9 * a_cols]);
  ra[3] = sparsetir_pack16(bottom[8 * a_cols], bottom[9 * a_cols]);
  const uint16_t* column = b + (int64_t)(2 * q) * b_rows + (int64_t)g * b_cols;
  rb[0] = sparsetir_pack16(column[0], column[b_rows]);
  rb[1] = sparsetir_pack16(column[8 * b_rows], column[9 * b_rows]);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (kBf16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  }
#else
  sparsetir_mma_by_shuffles<kBf16>(acc, ra, rb, lane);
#endif
}

// The first position in [begin, end) whose element is >= value (end if none).
template <typename I, typename V>
SPARSETIR_DEVICE int64_t sparsetir_lower_bound(const I* a, int64_t begin, int64_t end, V value) {
  while (begin < end) {
    int64_t mid = begin + (end - begin) / 2;
    if (a[mid] < value) begin = mid + 1; else end = mid;
  }
  return begin;
}

// Atomic addition: native for float32 / float64 (sm_60 and later); 16-bit
// values by compare-and-swap on the aligned 32-bit word that holds them,
// which every architecture has.
SPARSETIR_DEVICE void sparsetir_atomic_add(float* p, float v) { atomicAdd(p, v); }
SPARSETIR_DEVICE void sparsetir_atomic_add(double* p, double v) { atomicAdd(p, v); }
SPARSETIR_DEVICE void sparsetir_atomic_add(int32_t* p, int32_t v) { atomicAdd((int*)p, (int)v); }
SPARSETIR_DEVICE void sparsetir_atomic_add(int64_t* p, int64_t v) {
  atomicAdd((unsigned long long*)p, (unsigned long long)v);  // two's complement: the same bits
}
template <typename Add> SPARSETIR_DEVICE void sparsetir_atomic_update16(uint16_t* p, Add add) {
  unsigned int* word = (unsigned int*)((uint64_t)p & ~(uint64_t)3);
  const unsigned int shift = ((uint64_t)p & 2) ? 16u : 0u;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    uint16_t next = add((uint16_t)((assumed >> shift) & 0xffffu));
    old = atomicCAS(word, assumed, (assumed & ~(0xffffu << shift)) | ((unsigned int)next << shift));
  } while (old != assumed);
}
struct SparsetirAddHalf {
  float v;
  SPARSETIR_DEVICE_MEMBER uint16_t operator()(uint16_t x) const { return sparsetir_float_to_half(sparsetir_half_to_float(x) + v); }
};
struct SparsetirAddBf16 {
  float v;
  SPARSETIR_DEVICE_MEMBER uint16_t operator()(uint16_t x) const { return sparsetir_float_to_bf16(sparsetir_bf16_to_float(x) + v); }
};
SPARSETIR_DEVICE void sparsetir_atomic_add_half(uint16_t* p, float v) { sparsetir_atomic_update16(p, SparsetirAddHalf{v}); }
SPARSETIR_DEVICE void sparsetir_atomic_add_bf16(uint16_t* p, float v) { sparsetir_atomic_update16(p, SparsetirAddBf16{v}); }
)PRELUDE";

}  // namespace sparsetir
