// The CUDA device library a hand-written kernel expects, for the SIMT
// emulator: vector types and dim3, min / max, the integer and floating-point
// intrinsics, cached loads and stores, and the atomics beyond the emulator
// header's own (generated kernels need only those). Pasted into every
// emulated source before the emulator header's thread indices, so that
// threadIdx can be CUDA's uint3. What needs the emulator's runtime (the warp
// operations, assert) is in simt_emulator.h.
//
// Semantics are the GPU's where they are defined: float-to-integer
// conversions saturate (NaN gives 0), __clz(0) is 32, __saturatef(NaN) is
// 0, min / max of floats return the operand that is not NaN.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtDeviceLibrary = R"LIBRARY(
#include <time.h>
#include <limits>
#include <type_traits>

// Vector types: CUDA's members and alignment (a 4-vector of 8-byte values is
// aligned to 16 bytes), and make_<type><n>.
#define SPARSETIR_VECTOR_TYPES(T, name)                                                                    \
  struct __attribute__((aligned(sizeof(T)))) name##1 { T x; };                                             \
  struct __attribute__((aligned(2 * sizeof(T)))) name##2 { T x, y; };                                      \
  struct __attribute__((aligned(sizeof(T)))) name##3 { T x, y, z; };                                       \
  struct __attribute__((aligned(4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16))) name##4 { T x, y, z, w; };     \
  static inline name##1 make_##name##1(T x) { return {x}; }                                                \
  static inline name##2 make_##name##2(T x, T y) { return {x, y}; }                                        \
  static inline name##3 make_##name##3(T x, T y, T z) { return {x, y, z}; }                                \
  static inline name##4 make_##name##4(T x, T y, T z, T w) { return {x, y, z, w}; }                        \
  template <> struct sparsetir_element<name##1> { typedef T type; };                                       \
  template <> struct sparsetir_element<name##2> { typedef T type; };                                       \
  template <> struct sparsetir_element<name##3> { typedef T type; };                                       \
  template <> struct sparsetir_element<name##4> { typedef T type; };
// The scalar a tensor of vectors holds (a float4* kernel parameter takes a
// float32 tensor).
template <typename T> struct sparsetir_element { typedef T type; };
SPARSETIR_VECTOR_TYPES(signed char, char)
SPARSETIR_VECTOR_TYPES(unsigned char, uchar)
SPARSETIR_VECTOR_TYPES(short, short)
SPARSETIR_VECTOR_TYPES(unsigned short, ushort)
SPARSETIR_VECTOR_TYPES(int, int)
SPARSETIR_VECTOR_TYPES(unsigned int, uint)
SPARSETIR_VECTOR_TYPES(long, long)
SPARSETIR_VECTOR_TYPES(unsigned long, ulong)
SPARSETIR_VECTOR_TYPES(long long, longlong)
SPARSETIR_VECTOR_TYPES(unsigned long long, ulonglong)
SPARSETIR_VECTOR_TYPES(float, float)
SPARSETIR_VECTOR_TYPES(double, double)
#undef SPARSETIR_VECTOR_TYPES

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x = 1, unsigned int y = 1, unsigned int z = 1) : x(x), y(y), z(z) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};

// A tensor's element type E reaches a kernel parameter of type A: the same
// type, or an integer of E's size (int64_t is long where a tensor's int64 is
// long long; CUDA code reads int tensors through unsigned pointers).
template <typename A, typename E>
struct sparsetir_same_scalar
    : std::integral_constant<bool, std::is_same<A, E>::value ||
                                       (std::is_integral<A>::value && std::is_integral<E>::value &&
                                        !std::is_same<A, bool>::value && !std::is_same<E, bool>::value &&
                                        sizeof(A) == sizeof(E))> {};

// A tensor argument: converts to a pointer to its element type, const or
// not, or to a vector of it, as the kernel's parameter asks; a parameter of
// another type fails to compile, naming both.
template <typename E> struct sparsetir_tensor_pointer {
  void* p;
  template <typename P, typename = typename std::enable_if<sparsetir_same_scalar<
                            typename sparsetir_element<typename std::remove_cv<P>::type>::type, E>::value>::type>
  operator P*() const { return (P*)p; }
  operator void*() const { return p; }
  operator const void*() const { return p; }
};

// min / max: CUDA's overloads (mixed signedness takes the unsigned type;
// floats return the operand that is not NaN).
#define SPARSETIR_MIN_MAX(A, B, R)                                       \
  static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }     \
  static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
SPARSETIR_MIN_MAX(int, int, int)
SPARSETIR_MIN_MAX(unsigned int, unsigned int, unsigned int)
SPARSETIR_MIN_MAX(int, unsigned int, unsigned int)
SPARSETIR_MIN_MAX(unsigned int, int, unsigned int)
SPARSETIR_MIN_MAX(long, long, long)
SPARSETIR_MIN_MAX(unsigned long, unsigned long, unsigned long)
SPARSETIR_MIN_MAX(long, unsigned long, unsigned long)
SPARSETIR_MIN_MAX(unsigned long, long, unsigned long)
SPARSETIR_MIN_MAX(long long, long long, long long)
SPARSETIR_MIN_MAX(unsigned long long, unsigned long long, unsigned long long)
SPARSETIR_MIN_MAX(long long, unsigned long long, unsigned long long)
SPARSETIR_MIN_MAX(unsigned long long, long long, unsigned long long)
#undef SPARSETIR_MIN_MAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline double min(float a, double b) { return fmin(a, b); }
static inline double max(float a, double b) { return fmax(a, b); }
static inline double min(double a, float b) { return fmin(a, b); }
static inline double max(double a, float b) { return fmax(a, b); }

// Integer intrinsics.
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned long long __brevll(unsigned long long x) {
  unsigned long long r = 0;
  for (int i = 0; i < 64; ++i, x >>= 1) r = (r << 1) | (x & 1u);
  return r;
}
static inline unsigned int __brev(unsigned int x) { return (unsigned int)(__brevll(x) >> 32); }
static inline int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
static inline unsigned int __umulhi(unsigned int x, unsigned int y) {
  return (unsigned int)(((unsigned long long)x * y) >> 32);
}
static inline long long __mul64hi(long long x, long long y) { return (long long)(((__int128)x * y) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
// The low 24 bits of each operand (sign-extended for __mul24), the low 32
// bits of the product.
static inline int __mul24(int x, int y) {
  const long long a = (int)((unsigned int)x << 8) >> 8, b = (int)((unsigned int)y << 8) >> 8;
  return (int)(unsigned int)(a * b);
}
static inline unsigned int __umul24(unsigned int x, unsigned int y) { return (x & 0xffffffu) * (y & 0xffffffu); }
static inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
  return (unsigned int)((((unsigned long long)hi << 32 | lo) << (shift & 31)) >> 32);
}
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
  return (unsigned int)(((unsigned long long)hi << 32 | lo) >> (shift & 31));
}
// Byte i of the result is byte selector[4 i .. 4 i + 2] of the 8 bytes y:x.
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int selector) {
  const unsigned long long bytes = (unsigned long long)y << 32 | x;
  unsigned int r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned int)(bytes >> (8 * ((selector >> (4 * i)) & 7)) & 0xffu) << (8 * i);
  return r;
}

// Floating-point intrinsics; the fast ones are exact here. glibc's math.h
// declares __expf & co. but no library defines them: macros take the names.
#define __expf(x) expf(x)
#define __exp10f(x) exp10f(x)
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(x, y) powf(x, y)
#define __sincosf(x, s, c) sincosf(x, s, c)
static inline float __fdividef(float x, float y) { return x / y; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
static inline float __fadd_rn(float x, float y) { return x + y; }
static inline float __fsub_rn(float x, float y) { return x - y; }
static inline float __fmul_rn(float x, float y) { return x * y; }
static inline float __fdiv_rn(float x, float y) { return x / y; }
static inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
static inline double __dadd_rn(double x, double y) { return x + y; }
static inline double __dmul_rn(double x, double y) { return x * y; }
static inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }

// Conversions: float to integer rounds as named (rn: to nearest even, rz:
// toward zero, ru: up, rd: down) and saturates; NaN gives 0.
template <typename I> static inline I sparsetir_to_integer(double rounded) {
  if (rounded != rounded) return 0;
  if (rounded <= (double)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
  if (rounded >= (double)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
  return (I)rounded;
}
#define SPARSETIR_FLOAT_TO_INTEGER(F, from, I, to)                                                          \
  static inline I __##from##2##to##_rn(F x) { return sparsetir_to_integer<I>(nearbyint((double)x)); }      \
  static inline I __##from##2##to##_rz(F x) { return sparsetir_to_integer<I>(trunc((double)x)); }          \
  static inline I __##from##2##to##_ru(F x) { return sparsetir_to_integer<I>(ceil((double)x)); }           \
  static inline I __##from##2##to##_rd(F x) { return sparsetir_to_integer<I>(floor((double)x)); }
SPARSETIR_FLOAT_TO_INTEGER(float, float, int, int)
SPARSETIR_FLOAT_TO_INTEGER(float, float, unsigned int, uint)
SPARSETIR_FLOAT_TO_INTEGER(float, float, long long, ll)
SPARSETIR_FLOAT_TO_INTEGER(float, float, unsigned long long, ull)
SPARSETIR_FLOAT_TO_INTEGER(double, double, int, int)
SPARSETIR_FLOAT_TO_INTEGER(double, double, unsigned int, uint)
SPARSETIR_FLOAT_TO_INTEGER(double, double, long long, ll)
SPARSETIR_FLOAT_TO_INTEGER(double, double, unsigned long long, ull)
#undef SPARSETIR_FLOAT_TO_INTEGER
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned int x) { return (float)x; }
static inline float __ll2float_rn(long long x) { return (float)x; }
static inline float __ull2float_rn(unsigned long long x) { return (float)x; }
static inline double __int2double_rn(int x) { return (double)x; }
static inline float __double2float_rn(double x) { return (float)x; }
static inline unsigned int __float_as_uint(float f) { unsigned int i; memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned int i) { float f; memcpy(&f, &i, 4); return f; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }

// Loads and stores with cache hints: plain ones here.
#define SPARSETIR_LOAD(name) template <typename T> static inline T name(const T* p) { return *p; }
#define SPARSETIR_STORE(name) template <typename T> static inline void name(T* p, T v) { *p = v; }
SPARSETIR_LOAD(__ldg)
SPARSETIR_LOAD(__ldca)
SPARSETIR_LOAD(__ldcg)
SPARSETIR_LOAD(__ldcs)
SPARSETIR_LOAD(__ldlu)
SPARSETIR_LOAD(__ldcv)
SPARSETIR_STORE(__stwb)
SPARSETIR_STORE(__stcg)
SPARSETIR_STORE(__stcs)
SPARSETIR_STORE(__stwt)
#undef SPARSETIR_LOAD
#undef SPARSETIR_STORE

// The GPU's clock: the host's, in nanoseconds.
static inline long long clock64() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

#define __constant__ static
#define __managed__ static
#define __noinline__ __attribute__((noinline))
)LIBRARY";

// The atomics beyond the emulator header's: pasted after it.
inline constexpr const char* kSimtDeviceAtomics = R"LIBRARY(
// A thread that sleeps waits for another: a spin point.
static inline void __nanosleep(unsigned int) { sparsetir_spin("__nanosleep", nullptr, sparsetir_strong_look); }
// Those that change nothing are spin points (sparsetir_spin_if_*).
#define SPARSETIR_ATOMIC_BITS(T)                                                                                  \
  static inline T atomicAnd(T* p, T v) {                                                                          \
    return sparsetir_spin_if_zero(p, __atomic_fetch_and(p, v, __ATOMIC_RELAXED), (T)~v, "atomicAnd of all ones"); \
  }                                                                                                               \
  static inline T atomicOr(T* p, T v) {                                                                           \
    return sparsetir_spin_if_zero(p, __atomic_fetch_or(p, v, __ATOMIC_RELAXED), v, "atomicOr of 0");              \
  }                                                                                                               \
  static inline T atomicXor(T* p, T v) {                                                                          \
    return sparsetir_spin_if_zero(p, __atomic_fetch_xor(p, v, __ATOMIC_RELAXED), v, "atomicXor of 0");            \
  }
SPARSETIR_ATOMIC_BITS(int)
SPARSETIR_ATOMIC_BITS(unsigned int)
SPARSETIR_ATOMIC_BITS(unsigned long long)
#undef SPARSETIR_ATOMIC_BITS
static inline unsigned int atomicSub(unsigned int* p, unsigned int v) {
  return sparsetir_spin_if_zero(p, __atomic_fetch_sub(p, v, __ATOMIC_RELAXED), v, "atomicSub of 0");
}
static inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  return sparsetir_spin_if_same(p, __atomic_exchange_n(p, v, __ATOMIC_RELAXED), v,
                                "an atomicExch that changed nothing");
}
static inline float atomicExch(float* p, float v) {
  unsigned int bits = __atomic_exchange_n((unsigned int*)p, __float_as_uint(v), __ATOMIC_RELAXED);
  return __uint_as_float(sparsetir_spin_if_same(p, bits, __float_as_uint(v), "an atomicExch that changed nothing"));
}
static inline long long atomicMax(long long* p, long long v) { return sparsetir_emulated_atomic_extremum(p, v, true); }
static inline long long atomicMin(long long* p, long long v) { return sparsetir_emulated_atomic_extremum(p, v, false); }
static inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  return sparsetir_emulated_atomic_extremum(p, v, true);
}
static inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  return sparsetir_emulated_atomic_extremum(p, v, false);
}
static inline int atomicCAS(int* p, int expected, int desired) {
  return sparsetir_emulated_atomic_cas(p, expected, desired);
}
static inline unsigned short atomicCAS(unsigned short* p, unsigned short expected, unsigned short desired) {
  return sparsetir_emulated_atomic_cas(p, expected, desired);
}
// ((old >= limit) ? 0 : old + 1) and ((old == 0 || old > limit) ? limit : old - 1), in one step.
static inline unsigned int atomicInc(unsigned int* p, unsigned int limit) {
  unsigned int old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0u : old + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline unsigned int atomicDec(unsigned int* p, unsigned int limit) {
  unsigned int old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, old == 0 || old > limit ? limit : old - 1, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}
// The block- and system-scoped forms: every emulated atomic is the host's.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicExch_block atomicExch
#define atomicMin_block atomicMin
#define atomicMax_block atomicMax
#define atomicCAS_block atomicCAS
#define atomicAnd_block atomicAnd
#define atomicOr_block atomicOr
#define atomicXor_block atomicXor
static inline void __threadfence_system() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  sparsetir_spin("__threadfence_system", nullptr, sparsetir_weak_look);
}
)LIBRARY";

}  // namespace sparsetir
