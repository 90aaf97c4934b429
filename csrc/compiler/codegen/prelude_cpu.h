// Helpers pasted at the top of every generated CPU source. Kept small: the
// cold compile time of a kernel is dominated by what it includes.
#pragma once

#include <string>

#include "codegen/prelude_float16.h"

namespace sparsetir {

inline const std::string kCpuPrelude = R"PRELUDE(
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>

#define SPARSETIR_DEVICE static inline
static inline float sparsetir_bits_to_float(uint32_t bits) { float f; memcpy(&f, &bits, 4); return f; }
static inline uint32_t sparsetir_float_to_bits(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }

// float16 conversions in one instruction where the level has them (F16C on
// x86-64-v3 and up, the FP16 conversions every AArch64 core has); both round
// to nearest even like the portable ones below, which they replace.
#if defined(__F16C__)
#define SPARSETIR_HW_HALF
typedef short sparsetir_v8hi __attribute__((vector_size(16)));
typedef float sparsetir_v4sf __attribute__((vector_size(16)));
static inline float sparsetir_half_to_float(uint16_t h) {
  sparsetir_v8hi v = {(short)h, 0, 0, 0, 0, 0, 0, 0};
  return __builtin_ia32_vcvtph2ps(v)[0];
}
static inline uint16_t sparsetir_float_to_half(float f) {
  sparsetir_v4sf v = {f, 0.0f, 0.0f, 0.0f};
  return (uint16_t)__builtin_ia32_vcvtps2ph(v, 0)[0];  // 0: round to nearest even
}
#elif defined(__aarch64__)
#define SPARSETIR_HW_HALF
static inline float sparsetir_half_to_float(uint16_t h) { __fp16 x; memcpy(&x, &h, 2); return (float)x; }
static inline uint16_t sparsetir_float_to_half(float f) { __fp16 x = (__fp16)f; uint16_t h; memcpy(&h, &x, 2); return h; }
#endif
)PRELUDE" + std::string(kFloat16Conversions) + R"PRELUDE(

// Atomic addition of floating-point values: a compare-and-swap loop on the
// element's bits (GCC's atomic builtins add integers only). Relaxed order:
// the parallel loop's join orders the results for the host.
template <typename T, typename Bits, typename Add>
static inline void sparsetir_atomic_update(T* p, const Add& add) {
  Bits* bits = (Bits*)p;
  Bits old = __atomic_load_n(bits, __ATOMIC_RELAXED), next;
  do {
    T value;
    __builtin_memcpy(&value, &old, sizeof(T));
    value = add(value);
    __builtin_memcpy(&next, &value, sizeof(T));
  } while (!__atomic_compare_exchange_n(bits, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}
static inline void sparsetir_atomic_add(float* p, float v) {
  sparsetir_atomic_update<float, uint32_t>(p, [v](float x) { return x + v; });
}
static inline void sparsetir_atomic_add(double* p, double v) {
  sparsetir_atomic_update<double, uint64_t>(p, [v](double x) { return x + v; });
}
static inline void sparsetir_atomic_add_half(uint16_t* p, float v) {
  sparsetir_atomic_update<uint16_t, uint16_t>(
      p, [v](uint16_t x) { return sparsetir_float_to_half(sparsetir_half_to_float(x) + v); });
}
static inline void sparsetir_atomic_add_bf16(uint16_t* p, float v) {
  sparsetir_atomic_update<uint16_t, uint16_t>(
      p, [v](uint16_t x) { return sparsetir_float_to_bf16(sparsetir_bf16_to_float(x) + v); });
}

// exp for float without a library call, so that a loop over it vectorizes
// (libm's expf is one call per element). Cody-Waite reduction x = n ln2 + r,
// |r| <= ln2 / 2, a degree-6 polynomial for exp(r) (the Cephes expf
// coefficients, within 2 ulp of exp over the whole range), and 2^n applied as
// two factors so that results down to the smallest denormal stay exact in
// exponent. Overflow gives inf, underflow 0, NaN stays NaN; every branch is a
// select. n is rounded with the 1.5 * 2^23 trick (no rounding-mode call).
static inline float sparsetir_expf(float x) {
  const float hi = 88.72283905f, lo = -103.9720840f;
  float c = x > hi ? hi : (x < lo ? lo : x);
  const float shift = 12582912.0f;  // 1.5 * 2^23
  float n = (c * 1.44269504088896341f + shift) - shift;
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t k = (int32_t)n, k1 = k >> 1, k2 = k - k1;
  int32_t b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;
  float s1, s2;
  __builtin_memcpy(&s1, &b1, sizeof(float));
  __builtin_memcpy(&s2, &b2, sizeof(float));
  float y = p * s1 * s2;
  y = x > hi ? __builtin_inff() : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

// min / max give NaN when either operand is NaN (IEEE 754-2019 minimum / maximum).
template <typename T> static inline T sparsetir_min(T a, T b) { return (b < a || b != b) ? b : a; }
template <typename T> static inline T sparsetir_max(T a, T b) { return (a < b || b != b) ? b : a; }
template <typename T> static inline T sparsetir_floordiv(T a, T b) {
  T q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> static inline T sparsetir_floormod(T a, T b) {
  T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Integer division by a divisor that may be 0 or -1 at run time. x86 stops the
// process with SIGFPE on a zero divisor and on the smallest integer divided by
// -1, so a zero divisor sets the call's status (the host raises once the
// kernel returns; the quotient is 0 meanwhile) and -1 negates in unsigned
// arithmetic (wrapping, as the GPU does).
template <typename T> static inline bool sparsetir_divisor_is_zero(T b, int32_t* status) {
  if (__builtin_expect(b != 0, 1)) return false;
  __atomic_store_n(status, 1, __ATOMIC_RELAXED);
  return true;
}
template <typename T> static inline T sparsetir_negate(T a) { return (T)(0ULL - (unsigned long long)a); }
template <typename T> static inline T sparsetir_checked_truncdiv(T a, T b, int32_t* status) {
  if (sparsetir_divisor_is_zero(b, status)) return 0;
  return b == -1 ? sparsetir_negate(a) : a / b;
}
template <typename T> static inline T sparsetir_checked_floordiv(T a, T b, int32_t* status) {
  if (sparsetir_divisor_is_zero(b, status)) return 0;
  return b == -1 ? sparsetir_negate(a) : sparsetir_floordiv(a, b);
}
template <typename T> static inline T sparsetir_checked_floormod(T a, T b, int32_t* status) {
  if (sparsetir_divisor_is_zero(b, status)) return 0;
  return b == -1 ? (T)0 : sparsetir_floormod(a, b);
}
template <typename T> static inline T sparsetir_iabs(T a) { return a < 0 ? -a : a; }

// All lanes of a GCC vector set to one scalar (a single broadcast instruction).
// (s - 0 is exactly s for every value, -0.0 and NaN included, so the compiler
// folds the subtraction away and keeps the broadcast.)
template <typename V, typename S> static inline V sparsetir_broadcast(S s) { return s - (V){}; }

// Vector max / min with the scalar functions' semantics (a NaN in either
// operand gives NaN). x86's maxps(x, y) is x > y ? x : y, so maxps(b, a) is
// max(a, b) where no NaN is involved and `a` where one is: right when `a` is
// the NaN, and one select on `b != b` covers the other case. (GCC does not
// turn a vector select into maxps.)
typedef float sparsetir_v16sf __attribute__((vector_size(64)));
typedef double sparsetir_v8df __attribute__((vector_size(64)));
typedef float sparsetir_v8sf __attribute__((vector_size(32)));
typedef double sparsetir_v4df __attribute__((vector_size(32)));
// 16-bit operands in vectors: N float32 lanes loaded from, or stored to, N
// float16 / bfloat16 patterns, with the scalar conversions' rounding (nearest
// even, NaN kept quiet). bfloat16 is the upper half of a float32, so both
// directions are integer vector arithmetic at every level; float16 takes
// F16C (8 lanes) or AVX-512 (16) conversions where the level has them and the
// scalar ones lane by lane elsewhere.
template <typename V> struct sparsetir_halves {
  typedef uint16_t u16 __attribute__((vector_size(sizeof(V) / 2), aligned(2)));
  typedef uint32_t u32 __attribute__((vector_size(sizeof(V))));
  typedef int32_t i32 __attribute__((vector_size(sizeof(V))));
  static constexpr int lanes = sizeof(V) / 4;
};
typedef short sparsetir_v8hi_u __attribute__((vector_size(16), aligned(2)));
typedef short sparsetir_v16hi_u __attribute__((vector_size(32), aligned(2)));
typedef int sparsetir_v16si __attribute__((vector_size(64)));
template <typename V> static inline V sparsetir_vload_bf16(const uint16_t* p) {
  typedef sparsetir_halves<V> H;
  // GCC splits a generic 16-bit to 32-bit vector conversion into halves:
  // the level's zero extension where it has one.
#if defined(__AVX512F__)
  if constexpr (H::lanes == 16)
    return (V)(__builtin_ia32_pmovzxwd512_mask(*(const sparsetir_v16hi_u*)p, (sparsetir_v16si){}, (unsigned short)0xFFFF) << 16);
#endif
#if defined(__AVX2__)
  if constexpr (H::lanes == 8) return (V)(__builtin_ia32_pmovzxwd256(*(const sparsetir_v8hi_u*)p) << 16);
#endif
  return (V)(__builtin_convertvector(*(const typename H::u16*)p, typename H::u32) << 16);
}
template <typename V> static inline void sparsetir_vstore_bf16(uint16_t* p, V f) {
  typedef sparsetir_halves<V> H;
  typename H::u32 x = (typename H::u32)f;
  typename H::u32 rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  typename H::u32 quiet = (x >> 16) | 0x40u;
  typename H::i32 nan = (typename H::i32)((x & 0x7fffffffu) > 0x7f800000u);
  *(typename H::u16*)p = __builtin_convertvector(nan ? quiet : rounded, typename H::u16);
}
template <typename V> static inline V sparsetir_vload_half(const uint16_t* p) {
#if defined(__AVX512F__)
  if constexpr (sparsetir_halves<V>::lanes == 16)
    return (V)__builtin_ia32_vcvtph2ps512_mask(*(const sparsetir_v16hi_u*)p, (sparsetir_v16sf){}, (unsigned short)0xFFFF, 4);
#endif
#if defined(__F16C__)
  if constexpr (sparsetir_halves<V>::lanes == 8) return (V)__builtin_ia32_vcvtph2ps256(*(const sparsetir_v8hi_u*)p);
#endif
  V v;
  for (int l = 0; l < sparsetir_halves<V>::lanes; ++l) v[l] = sparsetir_half_to_float(p[l]);
  return v;
}
template <typename V> static inline void sparsetir_vstore_half(uint16_t* p, V f) {
  // 0: round to nearest even.
#if defined(__AVX512F__)
  if constexpr (sparsetir_halves<V>::lanes == 16) {
    *(sparsetir_v16hi_u*)p = __builtin_ia32_vcvtps2ph512_mask((sparsetir_v16sf)f, 0, (sparsetir_v16hi_u){}, (unsigned short)0xFFFF);
    return;
  }
#endif
#if defined(__F16C__)
  if constexpr (sparsetir_halves<V>::lanes == 8) {
    *(sparsetir_v8hi_u*)p = __builtin_ia32_vcvtps2ph256((sparsetir_v8sf)f, 0);
    return;
  }
#endif
  for (int l = 0; l < sparsetir_halves<V>::lanes; ++l) p[l] = sparsetir_float_to_half(f[l]);
}
// N float32 lanes rounded to bfloat16 / float16 and back (a cast to 16 bits
// inside a vector loop): a store and a load, which stay in registers.
template <typename V> static inline V sparsetir_vround_bf16(V f) {
  typename sparsetir_halves<V>::u16 h;
  sparsetir_vstore_bf16<V>((uint16_t*)&h, f);
  return sparsetir_vload_bf16<V>((const uint16_t*)&h);
}
template <typename V> static inline V sparsetir_vround_half(V f) {
  typename sparsetir_halves<V>::u16 h;
  sparsetir_vstore_half<V>((uint16_t*)&h, f);
  return sparsetir_vload_half<V>((const uint16_t*)&h);
}

// r, with the lanes where b is NaN taken from b.
template <typename V> static inline V sparsetir_nan_of(V b, V r) { return b == b ? r : b; }
template <typename V> static inline V sparsetir_vmax(V a, V b) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64 && sizeof(a[0]) == 4)
    return sparsetir_nan_of(b, (V)__builtin_ia32_maxps512_mask((sparsetir_v16sf)b, (sparsetir_v16sf)a, (sparsetir_v16sf)a, (unsigned short)0xFFFF, 4));
  if constexpr (sizeof(V) == 64 && sizeof(a[0]) == 8)
    return sparsetir_nan_of(b, (V)__builtin_ia32_maxpd512_mask((sparsetir_v8df)b, (sparsetir_v8df)a, (sparsetir_v8df)a, (unsigned char)0xFF, 4));
#endif
#if defined(__AVX__)
  if constexpr (sizeof(V) == 32 && sizeof(a[0]) == 4) return sparsetir_nan_of(b, (V)__builtin_ia32_maxps256((sparsetir_v8sf)b, (sparsetir_v8sf)a));
  if constexpr (sizeof(V) == 32 && sizeof(a[0]) == 8) return sparsetir_nan_of(b, (V)__builtin_ia32_maxpd256((sparsetir_v4df)b, (sparsetir_v4df)a));
#endif
  return sparsetir_nan_of(b, a < b ? b : a);
}
template <typename V> static inline V sparsetir_vmin(V a, V b) {
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64 && sizeof(a[0]) == 4)
    return sparsetir_nan_of(b, (V)__builtin_ia32_minps512_mask((sparsetir_v16sf)b, (sparsetir_v16sf)a, (sparsetir_v16sf)a, (unsigned short)0xFFFF, 4));
  if constexpr (sizeof(V) == 64 && sizeof(a[0]) == 8)
    return sparsetir_nan_of(b, (V)__builtin_ia32_minpd512_mask((sparsetir_v8df)b, (sparsetir_v8df)a, (sparsetir_v8df)a, (unsigned char)0xFF, 4));
#endif
#if defined(__AVX__)
  if constexpr (sizeof(V) == 32 && sizeof(a[0]) == 4) return sparsetir_nan_of(b, (V)__builtin_ia32_minps256((sparsetir_v8sf)b, (sparsetir_v8sf)a));
  if constexpr (sizeof(V) == 32 && sizeof(a[0]) == 8) return sparsetir_nan_of(b, (V)__builtin_ia32_minpd256((sparsetir_v4df)b, (sparsetir_v4df)a));
#endif
  return sparsetir_nan_of(b, b < a ? b : a);
}

// Horizontal sums (T.sp.horizontal_sum). A span of L elements is folded in
// halves, as a vector's lanes are. R spans S elements apart, summed into the
// R lanes of one vector, merge in registers first: the in-block pair step
// takes two vectors to one holding both's pair sums (vshufps / unpck, uzp on
// NEON, lanes never cross a 16-byte block), so after log2(R) steps every
// block holds one partial sum per span, and the blocks fold in halves. That is
// 3 instructions per pair step where each span summed alone ends in a chain of
// extracts and scalar additions. Other shapes sum the spans one by one.
template <int... I> struct sparsetir_ints {};
template <int N, int... I> struct sparsetir_make_ints : sparsetir_make_ints<N - 1, N - 1, I...> {};
template <int... I> struct sparsetir_make_ints<0, I...> { typedef sparsetir_ints<I...> type; };
template <typename T, int L> struct sparsetir_vec {
  typedef T type __attribute__((vector_size(L * sizeof(T)), aligned(sizeof(T))));
};
// The lane of a (or of b, numbered from `lanes`) that output lane k of a
// pair step adds (`odd` 0) or adds to (1): each chunk of `chunk` output lanes
// takes its first half from a, its second from b, each lane the sum of two
// `unit`-lane groups side by side.
constexpr int sparsetir_pair_lane(int k, int lanes, int chunk, int unit, int odd) {
  return (k % chunk < chunk / 2 ? 0 : lanes) + k / chunk * chunk + 2 * unit * (k % (chunk / 2) / unit) + k % unit +
         odd * unit;
}
template <typename V, int L, int C, int U, int... K>
static inline V sparsetir_pair_sums(V a, V b, sparsetir_ints<K...>) {
  return __builtin_shufflevector(a, b, sparsetir_pair_lane(K, L, C, U, 0)...) +
         __builtin_shufflevector(a, b, sparsetir_pair_lane(K, L, C, U, 1)...);
}
template <typename V, int L, int C, int U>
static inline V sparsetir_pair_sums(V a, V b) {
  return sparsetir_pair_sums<V, L, C, U>(a, b, typename sparsetir_make_ints<L>::type());
}
// v's L lanes folded in halves to W.
template <typename T, int L, int W, int... K>
static inline typename sparsetir_vec<T, W>::type sparsetir_fold(typename sparsetir_vec<T, L>::type v,
                                                                 sparsetir_ints<K...>) {
  if constexpr (L == W) {
    return v;
  } else {
    typename sparsetir_vec<T, L / 2>::type h =
        __builtin_shufflevector(v, v, K...) + __builtin_shufflevector(v, v, (K + L / 2)...);
    return sparsetir_fold<T, L / 2, W>(h, typename sparsetir_make_ints<L / 4>::type());
  }
}
template <typename T, int L, int W>
static inline typename sparsetir_vec<T, W>::type sparsetir_fold(typename sparsetir_vec<T, L>::type v) {
  return sparsetir_fold<T, L, W>(v, typename sparsetir_make_ints<L / 2>::type());
}
template <int L, typename T> static inline T sparsetir_horizontal_sum(const T* p) {
  return sparsetir_fold<T, L, 1>(*(const typename sparsetir_vec<T, L>::type*)p)[0];
}
template <typename V, int L, int S, typename T> static inline V sparsetir_horizontal_sums(const T* p) {
  typedef typename sparsetir_vec<T, L>::type VL;
  constexpr int R = sizeof(V) / sizeof(T), block = 16 / sizeof(T);
  auto span = [p](int r) { return *(const VL*)(p + r * S); };
  if constexpr (R == 4 && block == 4 && L >= 4) {
    const VL x = sparsetir_pair_sums<VL, L, 4, 1>(sparsetir_pair_sums<VL, L, 4, 1>(span(0), span(1)),
                                                   sparsetir_pair_sums<VL, L, 4, 1>(span(2), span(3)));
    return (V)sparsetir_fold<T, L, 4>(x);
  } else if constexpr (R == 4 && block == 2 && L == 2) {
    return (V)__builtin_shufflevector(sparsetir_pair_sums<VL, L, 2, 1>(span(0), span(1)),
                                      sparsetir_pair_sums<VL, L, 2, 1>(span(2), span(3)), 0, 1, 2, 3);
  } else if constexpr (R == 4 && block == 2 && L >= 4) {
    const VL x = sparsetir_pair_sums<VL, L, 4, 2>(sparsetir_pair_sums<VL, L, 2, 1>(span(0), span(1)),
                                                   sparsetir_pair_sums<VL, L, 2, 1>(span(2), span(3)));
    return (V)sparsetir_fold<T, L, 4>(x);
  } else if constexpr (R == 2 && block == 2 && L >= 2) {
    return (V)sparsetir_fold<T, L, 2>(sparsetir_pair_sums<VL, L, 2, 1>(span(0), span(1)));
  } else {
    V sums;
    for (int r = 0; r < R; ++r) sums[r] = sparsetir_horizontal_sum<L>(p + r * S);
    return sums;
  }
}

// Row `t` of `tasks` boundaries over rows [begin, end) so that every task gets
// about the same work, counting one unit per non-zero (indptr) plus one per row
// (a row's own fixed cost): the first row whose cumulative work reaches the
// task's share. Power-law graphs put most non-zeros in few rows, where an
// even split of rows leaves threads idle.
template <typename I> static inline int64_t sparsetir_balanced_row(const I* indptr, int64_t begin, int64_t end,
                                                                  int64_t t, int64_t tasks) {
  if (t <= 0) return begin;
  if (t >= tasks) return end;
  const double first = (double)indptr[begin] + (double)begin, last = (double)indptr[end] + (double)end;
  const double target = first + (last - first) * (double)t / (double)tasks;
  int64_t lo = begin, hi = end;
  while (lo < hi) {  // first row i with indptr[i] + i >= target
    int64_t mid = lo + (hi - lo) / 2;
    if ((double)indptr[mid] + (double)mid < target) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// The first position in [begin, end) whose element is >= value (end if none).
template <typename I, typename V> static inline int64_t sparsetir_lower_bound(const I* a, int64_t begin, int64_t end,
                                                                             V value) {
  while (begin < end) {
    int64_t mid = begin + (end - begin) / 2;
    if (a[mid] < value) begin = mid + 1; else end = mid;
  }
  return begin;
}

// Runs a C++ lambda as a launcher task.
template <typename F> static void sparsetir_task(void* closure, int64_t begin, int64_t end) {
  (*static_cast<F*>(closure))(begin, end);
}
)PRELUDE";

}  // namespace sparsetir
