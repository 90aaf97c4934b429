// CUDA's arithmetic in a named rounding direction, for hand-written kernels
// under the SIMT emulator: __fadd_rz / _ru / _rd and the same for sub, mul,
// div, rcp, sqrt and fmaf, their double forms (__dadd_rz, __ddiv_ru,
// __dsqrt_rd, __fma_rz, ...), the conversions of integers and doubles to
// float and of 64-bit integers to double in each direction, and the
// round-to-nearest forms C has no name for (__dsub_rn, __ddiv_rn, ...).
// Pasted after simt_device_math.h.
//
// The host's rounding mode is left alone (code compiled without
// -frounding-math may move arithmetic across a change of it). Instead each
// result is the host's correctly rounded one, to nearest, moved one step
// toward the named direction where the exact value lies on the other side
// of it. Which side it lies on is the sign of `exact - nearest`, computed
// in a wider type where the terms are exact: a product of two floats is
// exact in double and of two doubles in a 113-bit type (__float128), sums
// go through TwoSum, and a final subtraction rounds once, which keeps its
// sign. Overflow goes to the largest finite value or to infinity as the
// direction says, and an exact zero sum is -0 when rounding down, as IEEE
// 754 and the GPU have it.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtDirectedRounding = R"LIBRARY(
#include <cmath>
#if defined(__SIZEOF_FLOAT128__)
typedef __float128 sparsetir_quad;
#define SPARSETIR_HAS_QUAD 1
#elif __LDBL_MANT_DIG__ >= 113
typedef long double sparsetir_quad;
#define SPARSETIR_HAS_QUAD 1
#endif
static_assert(__LDBL_MANT_DIG__ >= 64, "long double holds every 64-bit integer");

// The type a product of two T is exact in.
template <typename T> struct sparsetir_wide;
template <> struct sparsetir_wide<float> { typedef double type; };
#ifdef SPARSETIR_HAS_QUAD
template <> struct sparsetir_wide<double> { typedef sparsetir_quad type; };
#endif

template <typename W> static inline int sparsetir_sign(W x) { return (x > 0) - (x < 0); }

// Directions numbered as the 16-bit float library numbers them.
enum { sparsetir_toward_zero = 1, sparsetir_down = 2, sparsetir_up = 3 };

// The exact result rounded in `mode`, from `nearest` (it rounded to
// nearest) and `side`, the sign of exact - nearest.
template <typename T> static inline T sparsetir_directed(T nearest, int side, int mode) {
  if (side == 0) return nearest;
  const T inf = std::numeric_limits<T>::infinity();
  if (mode == sparsetir_up) return side > 0 ? std::nextafter(nearest, inf) : nearest;
  if (mode == sparsetir_down) return side < 0 ? std::nextafter(nearest, -inf) : nearest;
  const bool away_from_zero = (nearest > 0 && side < 0) || (nearest < 0 && side > 0);
  return away_from_zero ? std::nextafter(nearest, T(0)) : nearest;
}

// A finite exact result whose nearest is infinite: the largest finite
// value, unless the direction is the infinity's.
template <typename T> static inline T sparsetir_overflowed(T nearest, int mode) {
  const T largest = std::numeric_limits<T>::max();
  if (mode == sparsetir_up && nearest > 0) return nearest;
  if (mode == sparsetir_down && nearest < 0) return nearest;
  return nearest > 0 ? largest : -largest;
}

// x + y exactly 0: -0 when rounding down unless both are +0, else +0
// unless both are -0 (IEEE 754's rule for an exact zero sum).
template <typename T> static inline T sparsetir_zero_sum(T x, T y, int mode) {
  const bool both_negative_zeros = x == 0 && y == 0 && std::signbit(x) && std::signbit(y);
  const bool both_positive_zeros = x == 0 && y == 0 && !std::signbit(x) && !std::signbit(y);
  if (mode == sparsetir_down) return both_positive_zeros ? T(0) : -T(0);
  return both_negative_zeros ? -T(0) : T(0);
}

template <typename T> static inline T sparsetir_add_rounded(T a, T b, int mode) {
  const T s = a + b;
  if (!std::isfinite(s)) return std::isfinite(a) && std::isfinite(b) ? sparsetir_overflowed(s, mode) : s;
  if (s == 0) return sparsetir_zero_sum(a, b, mode);  // a sum of two floats is 0 only where it is exactly
  const T shifted = s - a;
  const T error = (a - (s - shifted)) + (b - shifted);  // TwoSum: a + b == s + error exactly
  return sparsetir_directed(s, sparsetir_sign(error), mode);
}

template <typename T> static inline T sparsetir_mul_rounded(T a, T b, int mode) {
  typedef typename sparsetir_wide<T>::type W;
  const T p = a * b;
  if (!std::isfinite(p)) return std::isfinite(a) && std::isfinite(b) ? sparsetir_overflowed(p, mode) : p;
  return sparsetir_directed(p, sparsetir_sign((W)a * (W)b - (W)p), mode);
}

template <typename T> static inline T sparsetir_div_rounded(T a, T b, int mode) {
  typedef typename sparsetir_wide<T>::type W;
  const T q = a / b;
  if (!std::isfinite(a) || !std::isfinite(b) || b == 0) return q;  // exact: infinities, NaN, a / 0
  if (!std::isfinite(q)) return sparsetir_overflowed(q, mode);
  // a / b - q has the sign of (a - q b) b; q b is exact in W.
  return sparsetir_directed(q, sparsetir_sign((W)a - (W)q * (W)b) * sparsetir_sign(b), mode);
}

template <typename T> static inline T sparsetir_sqrt_rounded(T a, int mode) {
  typedef typename sparsetir_wide<T>::type W;
  const T s = std::sqrt(a);
  if (!(a > 0) || !std::isfinite(a)) return s;  // exact: zeros, infinity; NaN for the rest
  return sparsetir_directed(s, sparsetir_sign((W)a - (W)s * (W)s), mode);
}

template <typename T> static inline T sparsetir_fma_rounded(T a, T b, T c, int mode) {
  typedef typename sparsetir_wide<T>::type W;
  const T f = std::fma(a, b, c);
  if (!std::isfinite(f)) {
    return std::isfinite(a) && std::isfinite(b) && std::isfinite(c) ? sparsetir_overflowed(f, mode) : f;
  }
  const W p = (W)a * (W)b, s = p + (W)c, shifted = s - p;
  const W error = (p - (s - shifted)) + ((W)c - shifted);  // a b + c == s + error exactly
  if (s == 0 && error == 0) return sparsetir_zero_sum((T)p, c, mode);
  // s - f is exact (they are within a factor of 2, or f is 0).
  return sparsetir_directed(f, sparsetir_sign((s - (W)f) + error), mode);
}

// A value converted to T, rounded in `mode`; `exact` holds it exactly.
template <typename T, typename Exact> static inline T sparsetir_convert_rounded(Exact exact, int mode) {
  const T nearest = (T)exact;
  if (!std::isfinite(nearest) && std::isfinite(exact)) return sparsetir_overflowed(nearest, mode);
  return sparsetir_directed(nearest, sparsetir_sign(exact - (Exact)nearest), mode);
}

#define SPARSETIR_DIRECTED_FLOAT(suffix, mode)                                                                  \
  static inline float __fadd_##suffix(float a, float b) { return sparsetir_add_rounded(a, b, mode); }          \
  static inline float __fsub_##suffix(float a, float b) { return sparsetir_add_rounded(a, -b, mode); }         \
  static inline float __fmul_##suffix(float a, float b) { return sparsetir_mul_rounded(a, b, mode); }          \
  static inline float __fdiv_##suffix(float a, float b) { return sparsetir_div_rounded(a, b, mode); }          \
  static inline float __frcp_##suffix(float a) { return sparsetir_div_rounded(1.0f, a, mode); }                \
  static inline float __fsqrt_##suffix(float a) { return sparsetir_sqrt_rounded(a, mode); }                    \
  static inline float __fmaf_##suffix(float a, float b, float c) { return sparsetir_fma_rounded(a, b, c, mode); } \
  static inline float __double2float_##suffix(double x) { return sparsetir_convert_rounded<float>(x, mode); }  \
  static inline float __int2float_##suffix(int x) { return sparsetir_convert_rounded<float>((double)x, mode); } \
  static inline float __uint2float_##suffix(unsigned int x) {                                                   \
    return sparsetir_convert_rounded<float>((double)x, mode);                                                   \
  }                                                                                                             \
  static inline float __ll2float_##suffix(long long x) {                                                        \
    return sparsetir_convert_rounded<float>((long double)x, mode);                                              \
  }                                                                                                             \
  static inline float __ull2float_##suffix(unsigned long long x) {                                              \
    return sparsetir_convert_rounded<float>((long double)x, mode);                                              \
  }                                                                                                             \
  static inline double __ll2double_##suffix(long long x) {                                                      \
    return sparsetir_convert_rounded<double>((long double)x, mode);                                             \
  }                                                                                                             \
  static inline double __ull2double_##suffix(unsigned long long x) {                                            \
    return sparsetir_convert_rounded<double>((long double)x, mode);                                             \
  }
SPARSETIR_DIRECTED_FLOAT(rz, sparsetir_toward_zero)
SPARSETIR_DIRECTED_FLOAT(rd, sparsetir_down)
SPARSETIR_DIRECTED_FLOAT(ru, sparsetir_up)
#undef SPARSETIR_DIRECTED_FLOAT

#ifdef SPARSETIR_HAS_QUAD
#define SPARSETIR_DIRECTED_DOUBLE(suffix, mode)                                                                 \
  static inline double __dadd_##suffix(double a, double b) { return sparsetir_add_rounded(a, b, mode); }       \
  static inline double __dsub_##suffix(double a, double b) { return sparsetir_add_rounded(a, -b, mode); }      \
  static inline double __dmul_##suffix(double a, double b) { return sparsetir_mul_rounded(a, b, mode); }       \
  static inline double __ddiv_##suffix(double a, double b) { return sparsetir_div_rounded(a, b, mode); }       \
  static inline double __drcp_##suffix(double a) { return sparsetir_div_rounded(1.0, a, mode); }               \
  static inline double __dsqrt_##suffix(double a) { return sparsetir_sqrt_rounded(a, mode); }                  \
  static inline double __fma_##suffix(double a, double b, double c) { return sparsetir_fma_rounded(a, b, c, mode); }
SPARSETIR_DIRECTED_DOUBLE(rz, sparsetir_toward_zero)
SPARSETIR_DIRECTED_DOUBLE(rd, sparsetir_down)
SPARSETIR_DIRECTED_DOUBLE(ru, sparsetir_up)
#undef SPARSETIR_DIRECTED_DOUBLE
#endif

// To nearest: the host's own operations.
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __drcp_rn(double a) { return 1.0 / a; }
static inline double __dsqrt_rn(double a) { return sqrt(a); }
static inline double __ll2double_rn(long long x) { return (double)x; }
static inline double __ull2double_rn(unsigned long long x) { return (double)x; }
static inline double __uint2double_rn(unsigned int x) { return (double)x; }
)LIBRARY";

}  // namespace sparsetir
