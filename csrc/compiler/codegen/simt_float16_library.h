// CUDA's cuda_fp16.h and cuda_bf16.h for hand-written kernels under the SIMT
// emulator: __half / __half2 and __nv_bfloat16 / __nv_bfloat162 with their
// conversions, operators, arithmetic, comparisons, math functions and
// atomics. Pasted after the emulator header into a source that includes
// either header (generated kernels store 16-bit values as bits and never
// need it).
//
// Results round like the GPU's. Each operation is computed in float and
// rounded once to 16 bits; float's 24-bit significand is at least 2p + 2 bits
// for float16's p = 11 and bfloat16's p = 8, so that double rounding of +, -,
// *, / and sqrt is innocuous (Figueroa, 1995). Where float does not suffice
// (fma, conversions from double and 64-bit integers) the value is first
// rounded to odd, which keeps the second rounding exact. The math functions
// (hexp, hsin, ...) round the float function's value; the GPU's
// approximations may differ from it in the last bit.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "codegen/prelude_float16.h"

namespace sparsetir {

// The formats and rounding helpers, once.
inline const std::string kSimtFloat16Common = R"LIBRARY(
SPARSETIR_DEVICE float sparsetir_bits_to_float(uint32_t bits) { return __int_as_float((int)bits); }
SPARSETIR_DEVICE uint32_t sparsetir_float_to_bits(float f) { return (uint32_t)__float_as_int(f); }
)LIBRARY" + std::string(kFloat16Conversions) + R"LIBRARY(
struct sparsetir_half_format {
  static constexpr unsigned short kCanonicalNan = 0x7fffu;
  static float to_float(unsigned short bits) { return sparsetir_half_to_float(bits); }
  static unsigned short from_float(float f) { return sparsetir_float_to_half(f); }
};
struct sparsetir_bf16_format {
  static constexpr unsigned short kCanonicalNan = 0x7fffu;
  static float to_float(unsigned short bits) { return sparsetir_bf16_to_float(bits); }
  static unsigned short from_float(float f) { return sparsetir_float_to_bf16(f); }
};

// x rounded to float, to odd: where inexact, the neighbour toward x whose last
// bit is 1. Rounding that float again to 16 bits (at least 2 bits fewer)
// gives x rounded once.
static inline float sparsetir_float_odd(long double x) {
  const float f = (float)x;
  if ((long double)f == x || x != x) return f;
  uint32_t bits = sparsetir_float_to_bits(f);
  if (!(bits & 1u)) bits = fabsl((long double)f) > fabsl(x) ? bits - 1u : bits + 1u;
  return sparsetir_bits_to_float(bits);
}

// a b + c rounded to float, to odd. The product is exact in long double (48
// bits); the rounding error of the sum (Knuth's TwoSum) says whether the sum
// is inexact and on which side the exact value lies.
static inline float sparsetir_fma_odd(float a, float b, float c) {
  const long double p = (long double)a * b, s = p + c, t = s - p, e = (p - (s - t)) + (c - t);
  long double r = s;
  if (e != 0 && isfinite(s)) {
    uint64_t low;  // the significand's last bits, in the first bytes of a long double
    memcpy(&low, &r, sizeof(low));
    if (!(low & 1u)) r = nextafterl(s, e > 0 ? (long double)INFINITY : -(long double)INFINITY);
  }
  return sparsetir_float_odd(r);
}

// One 16-bit value further up or down (sign and magnitude bits).
static inline unsigned short sparsetir_step_16(unsigned short r, bool up) {
  if (!(r & 0x7fffu)) return up ? 0x0001u : 0x8001u;
  return ((r & 0x8000u) != 0) == up ? r - 1u : r + 1u;
}

// The bits of x in format F, rounded as `mode` says: 0 to nearest even, 1
// toward zero, 2 down, 3 up. Exact for every float, double and 64-bit integer.
template <typename F> static inline unsigned short sparsetir_round_16(long double x, int mode) {
  const unsigned short r = F::from_float(sparsetir_float_odd(x));
  if (mode == 0 || x != x) return r;
  const long double v = F::to_float(r);
  const bool down = v > x && (mode == 2 || (mode == 1 && v > 0)), up = v < x && (mode == 3 || (mode == 1 && v < 0));
  return down || up ? sparsetir_step_16(r, up) : r;
}
)LIBRARY";

// Per type: @T@ the scalar, @T2@ the pair, @N@ and @N2@ their names in CUDA's
// function names (half, half2 / bfloat16, bfloat162), @F@ the format.
inline constexpr const char* kSimtFloat16Type = R"LIBRARY(
struct @T@_raw { unsigned short x; };
struct @T2@_raw { unsigned short x, y; };
struct __attribute__((aligned(2))) @T@ {
  unsigned short __x;
  @T@() = default;
  constexpr @T@(const @T@_raw& raw) : __x(raw.x) {}
  @T@(float f) : __x(@F@::from_float(f)) {}
  @T@(double d) : __x(sparsetir_round_16<@F@>(d, 0)) {}
  @T@(short v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  @T@(unsigned short v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  @T@(int v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  @T@(unsigned int v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  @T@(long v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  @T@(unsigned long v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  @T@(long long v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  @T@(unsigned long long v) : __x(sparsetir_round_16<@F@>(v, 0)) {}
  operator @T@_raw() const { return {__x}; }
  operator float() const { return @F@::to_float(__x); }
  // To integers: toward zero, saturated (NaN gives 0).
  operator signed char() const { return sparsetir_to_integer<signed char>(truncf(@F@::to_float(__x))); }
  operator unsigned char() const { return sparsetir_to_integer<unsigned char>(truncf(@F@::to_float(__x))); }
  operator char() const { return sparsetir_to_integer<char>(truncf(@F@::to_float(__x))); }
  operator short() const { return sparsetir_to_integer<short>(truncf(@F@::to_float(__x))); }
  operator unsigned short() const { return sparsetir_to_integer<unsigned short>(truncf(@F@::to_float(__x))); }
  operator int() const { return sparsetir_to_integer<int>(truncf(@F@::to_float(__x))); }
  operator unsigned int() const { return sparsetir_to_integer<unsigned int>(truncf(@F@::to_float(__x))); }
  operator long() const { return sparsetir_to_integer<long>(truncf(@F@::to_float(__x))); }
  operator unsigned long() const { return sparsetir_to_integer<unsigned long>(truncf(@F@::to_float(__x))); }
  operator long long() const { return sparsetir_to_integer<long long>(truncf(@F@::to_float(__x))); }
  operator unsigned long long() const { return sparsetir_to_integer<unsigned long long>(truncf(@F@::to_float(__x))); }
  // Both zeros are false.
  constexpr operator bool() const { return (__x & 0x7fffu) != 0; }
  @T@& operator=(const @T@_raw& raw) { __x = raw.x; return *this; }
  @T@& operator=(float f) { __x = @F@::from_float(f); return *this; }
  @T@& operator=(double d) { __x = sparsetir_round_16<@F@>(d, 0); return *this; }
  @T@& operator=(short v) { return *this = @T@(v); }
  @T@& operator=(unsigned short v) { return *this = @T@(v); }
  @T@& operator=(int v) { return *this = @T@(v); }
  @T@& operator=(unsigned int v) { return *this = @T@(v); }
  @T@& operator=(long long v) { return *this = @T@(v); }
  @T@& operator=(unsigned long long v) { return *this = @T@(v); }
};
struct __attribute__((aligned(4))) @T2@ {
  @T@ x, y;
  @T2@() = default;
  constexpr @T2@(const @T@& a, const @T@& b) : x(a), y(b) {}
  constexpr @T2@(const @T2@_raw& raw) : x(@T@_raw{raw.x}), y(@T@_raw{raw.y}) {}
  operator @T2@_raw() const { return {x.__x, y.__x}; }
  @T2@& operator=(const @T2@_raw& raw) { x.__x = raw.x, y.__x = raw.y; return *this; }
};
template <> struct sparsetir_element<@T2@> { typedef @T@ type; };
// A tensor of this type reaches a parameter of it, of its pairs, or of 16-bit integers (its bits).
template <typename A>
struct sparsetir_same_scalar<A, @T@>
    : std::integral_constant<bool, std::is_same<A, @T@>::value ||
                                       (std::is_integral<A>::value && !std::is_same<A, bool>::value &&
                                        sizeof(A) == 2)> {};

SPARSETIR_DEVICE @T@ sparsetir_@N@_of(unsigned short bits) { return @T@_raw{bits}; }
SPARSETIR_DEVICE @T@ sparsetir_@N@_of(float f) { return sparsetir_@N@_of(@F@::from_float(f)); }

// Conversions. Rounding modes: rn to nearest even, rz toward zero, rd down, ru up.
SPARSETIR_DEVICE float __@N@2float(@T@ h) { return @F@::to_float(h.__x); }
SPARSETIR_DEVICE @T@ __float2@N@(float f) { return sparsetir_@N@_of(f); }
SPARSETIR_DEVICE @T@ __float2@N@_rn(float f) { return sparsetir_@N@_of(f); }
SPARSETIR_DEVICE @T@ __float2@N@_rz(float f) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(f, 1)); }
SPARSETIR_DEVICE @T@ __float2@N@_rd(float f) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(f, 2)); }
SPARSETIR_DEVICE @T@ __float2@N@_ru(float f) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(f, 3)); }
SPARSETIR_DEVICE @T@ __double2@N@(double d) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(d, 0)); }
#define SPARSETIR_INTEGER_CONVERSIONS(I, name)                                                                       \
  SPARSETIR_DEVICE @T@ __##name##2@N@_rn(I v) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(v, 0)); }          \
  SPARSETIR_DEVICE @T@ __##name##2@N@_rz(I v) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(v, 1)); }          \
  SPARSETIR_DEVICE @T@ __##name##2@N@_rd(I v) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(v, 2)); }          \
  SPARSETIR_DEVICE @T@ __##name##2@N@_ru(I v) { return sparsetir_@N@_of(sparsetir_round_16<@F@>(v, 3)); }          \
  SPARSETIR_DEVICE I __@N@2##name##_rn(@T@ h) { return sparsetir_to_integer<I>(nearbyintf(__@N@2float(h))); }       \
  SPARSETIR_DEVICE I __@N@2##name##_rz(@T@ h) { return sparsetir_to_integer<I>(truncf(__@N@2float(h))); }           \
  SPARSETIR_DEVICE I __@N@2##name##_rd(@T@ h) { return sparsetir_to_integer<I>(floorf(__@N@2float(h))); }           \
  SPARSETIR_DEVICE I __@N@2##name##_ru(@T@ h) { return sparsetir_to_integer<I>(ceilf(__@N@2float(h))); }
SPARSETIR_INTEGER_CONVERSIONS(short, short)
SPARSETIR_INTEGER_CONVERSIONS(unsigned short, ushort)
SPARSETIR_INTEGER_CONVERSIONS(int, int)
SPARSETIR_INTEGER_CONVERSIONS(unsigned int, uint)
SPARSETIR_INTEGER_CONVERSIONS(long long, ll)
SPARSETIR_INTEGER_CONVERSIONS(unsigned long long, ull)
#undef SPARSETIR_INTEGER_CONVERSIONS
SPARSETIR_DEVICE short __@N@_as_short(@T@ h) { return (short)h.__x; }
SPARSETIR_DEVICE unsigned short __@N@_as_ushort(@T@ h) { return h.__x; }
SPARSETIR_DEVICE @T@ __short_as_@N@(short bits) { return @T@_raw{(unsigned short)bits}; }
SPARSETIR_DEVICE @T@ __ushort_as_@N@(unsigned short bits) { return @T@_raw{bits}; }

// Pairs.
SPARSETIR_DEVICE @T2@ make_@N2@(@T@ x, @T@ y) { return @T2@(x, y); }
SPARSETIR_DEVICE @T2@ __halves2@N2@(@T@ x, @T@ y) { return @T2@(x, y); }
SPARSETIR_DEVICE @T2@ __@N@2@N2@(@T@ x) { return @T2@(x, x); }
SPARSETIR_DEVICE @T2@ __float2@N2@_rn(float f) { return __@N@2@N2@(__float2@N@(f)); }
SPARSETIR_DEVICE @T2@ __floats2@N2@_rn(float x, float y) { return @T2@(__float2@N@(x), __float2@N@(y)); }
SPARSETIR_DEVICE @T2@ __float22@N2@_rn(float2 v) { return __floats2@N2@_rn(v.x, v.y); }
SPARSETIR_DEVICE float2 __@N2@2float2(@T2@ v) { return make_float2(v.x, v.y); }
SPARSETIR_DEVICE float __low2float(@T2@ v) { return v.x; }
SPARSETIR_DEVICE float __high2float(@T2@ v) { return v.y; }
SPARSETIR_DEVICE @T@ __low2@N@(@T2@ v) { return v.x; }
SPARSETIR_DEVICE @T@ __high2@N@(@T2@ v) { return v.y; }
SPARSETIR_DEVICE @T2@ __low2@N2@(@T2@ v) { return @T2@(v.x, v.x); }
SPARSETIR_DEVICE @T2@ __high2@N2@(@T2@ v) { return @T2@(v.y, v.y); }
SPARSETIR_DEVICE @T2@ __lows2@N2@(@T2@ a, @T2@ b) { return @T2@(a.x, b.x); }
SPARSETIR_DEVICE @T2@ __highs2@N2@(@T2@ a, @T2@ b) { return @T2@(a.y, b.y); }
SPARSETIR_DEVICE @T2@ __lowhigh2highlow(@T2@ v) { return @T2@(v.y, v.x); }

// Arithmetic: rounded once from float (see the top of simt_float16_library.h).
SPARSETIR_DEVICE @T@ __hadd(@T@ a, @T@ b) { return (float)a + (float)b; }
SPARSETIR_DEVICE @T@ __hsub(@T@ a, @T@ b) { return (float)a - (float)b; }
SPARSETIR_DEVICE @T@ __hmul(@T@ a, @T@ b) { return (float)a * (float)b; }
SPARSETIR_DEVICE @T@ __hdiv(@T@ a, @T@ b) { return (float)a / (float)b; }
SPARSETIR_DEVICE @T@ __hadd_rn(@T@ a, @T@ b) { return __hadd(a, b); }
SPARSETIR_DEVICE @T@ __hsub_rn(@T@ a, @T@ b) { return __hsub(a, b); }
SPARSETIR_DEVICE @T@ __hmul_rn(@T@ a, @T@ b) { return __hmul(a, b); }
SPARSETIR_DEVICE @T@ __hfma(@T@ a, @T@ b, @T@ c) {
  return sparsetir_@N@_of(@F@::from_float(sparsetir_fma_odd(a, b, c)));
}
SPARSETIR_DEVICE @T@ __hneg(@T@ a) { return @T@_raw{(unsigned short)(a.__x ^ 0x8000u)}; }
SPARSETIR_DEVICE @T@ __habs(@T@ a) { return @T@_raw{(unsigned short)(a.__x & 0x7fffu)}; }
// _sat: clamped to [0, 1], NaN to 0; _relu: negative to 0, NaN kept.
SPARSETIR_DEVICE @T@ sparsetir_saturate(@T@ a) { return __saturatef((float)a); }
SPARSETIR_DEVICE @T@ sparsetir_relu(@T@ a) {
  return (float)a < 0.0f ? @T@(0.0f) : ((float)a != (float)a ? sparsetir_@N@_of(@F@::kCanonicalNan) : a);
}
SPARSETIR_DEVICE @T@ __hadd_sat(@T@ a, @T@ b) { return sparsetir_saturate(__hadd(a, b)); }
SPARSETIR_DEVICE @T@ __hsub_sat(@T@ a, @T@ b) { return sparsetir_saturate(__hsub(a, b)); }
SPARSETIR_DEVICE @T@ __hmul_sat(@T@ a, @T@ b) { return sparsetir_saturate(__hmul(a, b)); }
SPARSETIR_DEVICE @T@ __hfma_sat(@T@ a, @T@ b, @T@ c) { return sparsetir_saturate(__hfma(a, b, c)); }
SPARSETIR_DEVICE @T@ __hfma_relu(@T@ a, @T@ b, @T@ c) { return sparsetir_relu(__hfma(a, b, c)); }
// max / min: the operand that is not NaN (NaN only if both are); _nan: NaN if either is. +0 > -0.
SPARSETIR_DEVICE bool sparsetir_greater(@T@ a, @T@ b) {
  return (float)a > (float)b || ((float)a == (float)b && !(a.__x & 0x8000u));
}
SPARSETIR_DEVICE @T@ __hmax(@T@ a, @T@ b) {
  if ((float)a != (float)a) return (float)b != (float)b ? sparsetir_@N@_of(@F@::kCanonicalNan) : b;
  if ((float)b != (float)b) return a;
  return sparsetir_greater(a, b) ? a : b;
}
SPARSETIR_DEVICE @T@ __hmin(@T@ a, @T@ b) {
  if ((float)a != (float)a) return (float)b != (float)b ? sparsetir_@N@_of(@F@::kCanonicalNan) : b;
  if ((float)b != (float)b) return a;
  return sparsetir_greater(a, b) ? b : a;
}
SPARSETIR_DEVICE @T@ __hmax_nan(@T@ a, @T@ b) {
  return ((float)a != (float)a || (float)b != (float)b) ? sparsetir_@N@_of(@F@::kCanonicalNan) : __hmax(a, b);
}
SPARSETIR_DEVICE @T@ __hmin_nan(@T@ a, @T@ b) {
  return ((float)a != (float)a || (float)b != (float)b) ? sparsetir_@N@_of(@F@::kCanonicalNan) : __hmin(a, b);
}

// Comparisons: ordered (false with a NaN) and unordered (the u forms: true with a NaN).
SPARSETIR_DEVICE bool __heq(@T@ a, @T@ b) { return (float)a == (float)b; }
SPARSETIR_DEVICE bool __hne(@T@ a, @T@ b) { return (float)a < (float)b || (float)a > (float)b; }
SPARSETIR_DEVICE bool __hlt(@T@ a, @T@ b) { return (float)a < (float)b; }
SPARSETIR_DEVICE bool __hle(@T@ a, @T@ b) { return (float)a <= (float)b; }
SPARSETIR_DEVICE bool __hgt(@T@ a, @T@ b) { return (float)a > (float)b; }
SPARSETIR_DEVICE bool __hge(@T@ a, @T@ b) { return (float)a >= (float)b; }
SPARSETIR_DEVICE bool __hequ(@T@ a, @T@ b) { return !__hne(a, b); }
SPARSETIR_DEVICE bool __hneu(@T@ a, @T@ b) { return !__heq(a, b); }
SPARSETIR_DEVICE bool __hltu(@T@ a, @T@ b) { return !__hge(a, b); }
SPARSETIR_DEVICE bool __hleu(@T@ a, @T@ b) { return !__hgt(a, b); }
SPARSETIR_DEVICE bool __hgtu(@T@ a, @T@ b) { return !__hle(a, b); }
SPARSETIR_DEVICE bool __hgeu(@T@ a, @T@ b) { return !__hlt(a, b); }
SPARSETIR_DEVICE bool __hisnan(@T@ a) { return (float)a != (float)a; }
// -1 for -infinity, 1 for +infinity, else 0.
SPARSETIR_DEVICE int __hisinf(@T@ a) { return isinf((float)a) ? ((float)a < 0.0f ? -1 : 1) : 0; }

// Math functions, and their pair forms.
#define SPARSETIR_MATH(name, pair, expr)                                    \
  SPARSETIR_DEVICE @T@ name(@T@ a) { const float x = a; return expr; } \
  SPARSETIR_DEVICE @T2@ pair(@T2@ a) { return @T2@(name(a.x), name(a.y)); }
SPARSETIR_MATH(hexp, h2exp, expf(x))
SPARSETIR_MATH(hexp2, h2exp2, exp2f(x))
SPARSETIR_MATH(hexp10, h2exp10, exp10f(x))
SPARSETIR_MATH(hlog, h2log, logf(x))
SPARSETIR_MATH(hlog2, h2log2, log2f(x))
SPARSETIR_MATH(hlog10, h2log10, log10f(x))
SPARSETIR_MATH(hsqrt, h2sqrt, sqrtf(x))
SPARSETIR_MATH(hrsqrt, h2rsqrt, 1.0f / sqrtf(x))
SPARSETIR_MATH(hrcp, h2rcp, 1.0f / x)
SPARSETIR_MATH(hsin, h2sin, sinf(x))
SPARSETIR_MATH(hcos, h2cos, cosf(x))
SPARSETIR_MATH(htanh, h2tanh, tanhf(x))
SPARSETIR_MATH(htanh_approx, h2tanh_approx, tanhf(x))
SPARSETIR_MATH(hfloor, h2floor, floorf(x))
SPARSETIR_MATH(hceil, h2ceil, ceilf(x))
SPARSETIR_MATH(htrunc, h2trunc, truncf(x))
SPARSETIR_MATH(hrint, h2rint, nearbyintf(x))
#undef SPARSETIR_MATH

// The pair forms: each half on its own.
#define SPARSETIR_PAIR1(name, scalar) \
  SPARSETIR_DEVICE @T2@ name(@T2@ a) { return @T2@(scalar(a.x), scalar(a.y)); }
#define SPARSETIR_PAIR2(name, scalar) \
  SPARSETIR_DEVICE @T2@ name(@T2@ a, @T2@ b) { return @T2@(scalar(a.x, b.x), scalar(a.y, b.y)); }
#define SPARSETIR_PAIR_COMPARE(op)                                                                      \
  SPARSETIR_DEVICE @T2@ __h##op##2(@T2@ a, @T2@ b) {                                                    \
    return @T2@(@T@(__h##op(a.x, b.x) ? 1.0f : 0.0f), @T@(__h##op(a.y, b.y) ? 1.0f : 0.0f));            \
  }                                                                                                      \
  SPARSETIR_DEVICE bool __hb##op##2(@T2@ a, @T2@ b) { return __h##op(a.x, b.x) && __h##op(a.y, b.y); }
SPARSETIR_PAIR2(__hadd2, __hadd)
SPARSETIR_PAIR2(__hsub2, __hsub)
SPARSETIR_PAIR2(__hmul2, __hmul)
SPARSETIR_PAIR2(__h2div, __hdiv)
SPARSETIR_PAIR2(__hadd2_rn, __hadd)
SPARSETIR_PAIR2(__hsub2_rn, __hsub)
SPARSETIR_PAIR2(__hmul2_rn, __hmul)
SPARSETIR_PAIR2(__hadd2_sat, __hadd_sat)
SPARSETIR_PAIR2(__hsub2_sat, __hsub_sat)
SPARSETIR_PAIR2(__hmul2_sat, __hmul_sat)
SPARSETIR_PAIR2(__hmax2, __hmax)
SPARSETIR_PAIR2(__hmin2, __hmin)
SPARSETIR_PAIR2(__hmax2_nan, __hmax_nan)
SPARSETIR_PAIR2(__hmin2_nan, __hmin_nan)
SPARSETIR_PAIR1(__hneg2, __hneg)
SPARSETIR_PAIR1(__habs2, __habs)
SPARSETIR_PAIR_COMPARE(eq)
SPARSETIR_PAIR_COMPARE(ne)
SPARSETIR_PAIR_COMPARE(lt)
SPARSETIR_PAIR_COMPARE(le)
SPARSETIR_PAIR_COMPARE(gt)
SPARSETIR_PAIR_COMPARE(ge)
SPARSETIR_PAIR_COMPARE(equ)
SPARSETIR_PAIR_COMPARE(neu)
SPARSETIR_PAIR_COMPARE(ltu)
SPARSETIR_PAIR_COMPARE(leu)
SPARSETIR_PAIR_COMPARE(gtu)
SPARSETIR_PAIR_COMPARE(geu)
#undef SPARSETIR_PAIR1
#undef SPARSETIR_PAIR2
#undef SPARSETIR_PAIR_COMPARE
SPARSETIR_DEVICE @T2@ __hfma2(@T2@ a, @T2@ b, @T2@ c) { return @T2@(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
SPARSETIR_DEVICE @T2@ __hfma2_sat(@T2@ a, @T2@ b, @T2@ c) {
  return @T2@(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y));
}
SPARSETIR_DEVICE @T2@ __hfma2_relu(@T2@ a, @T2@ b, @T2@ c) {
  return @T2@(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y));
}
// (a.x + i a.y) (b.x + i b.y) + (c.x + i c.y), each part rounded once per step.
SPARSETIR_DEVICE @T2@ __hcmadd(@T2@ a, @T2@ b, @T2@ c) {
  return @T2@(__hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x)), __hfma(a.y, b.x, __hfma(a.x, b.y, c.y)));
}
SPARSETIR_DEVICE @T2@ __hisnan2(@T2@ a) {
  return @T2@(@T@(__hisnan(a.x) ? 1.0f : 0.0f), @T@(__hisnan(a.y) ? 1.0f : 0.0f));
}

// Operators: CUDA's, with its overloads (an operand of another type converts
// to @T@ or the @T@ to float, as on the GPU: `h + 1.0f` is ambiguous there too).
// A pair compares true where both halves do.
#define SPARSETIR_OPERATORS(T, add, sub, mul, div, neg, eq, ne, lt, le, gt, ge, one)  \
  SPARSETIR_DEVICE T operator+(const T& a, const T& b) { return add(a, b); }          \
  SPARSETIR_DEVICE T operator-(const T& a, const T& b) { return sub(a, b); }          \
  SPARSETIR_DEVICE T operator*(const T& a, const T& b) { return mul(a, b); }          \
  SPARSETIR_DEVICE T operator/(const T& a, const T& b) { return div(a, b); }          \
  SPARSETIR_DEVICE T& operator+=(T& a, const T& b) { return a = add(a, b); }          \
  SPARSETIR_DEVICE T& operator-=(T& a, const T& b) { return a = sub(a, b); }          \
  SPARSETIR_DEVICE T& operator*=(T& a, const T& b) { return a = mul(a, b); }          \
  SPARSETIR_DEVICE T& operator/=(T& a, const T& b) { return a = div(a, b); }          \
  SPARSETIR_DEVICE T& operator++(T& a) { return a = add(a, one); }                    \
  SPARSETIR_DEVICE T& operator--(T& a) { return a = sub(a, one); }                    \
  SPARSETIR_DEVICE T operator++(T& a, int) { const T old = a; ++a; return old; }      \
  SPARSETIR_DEVICE T operator--(T& a, int) { const T old = a; --a; return old; }      \
  SPARSETIR_DEVICE T operator+(const T& a) { return a; }                              \
  SPARSETIR_DEVICE T operator-(const T& a) { return neg(a); }                         \
  SPARSETIR_DEVICE bool operator==(const T& a, const T& b) { return eq(a, b); }       \
  SPARSETIR_DEVICE bool operator!=(const T& a, const T& b) { return ne(a, b); }       \
  SPARSETIR_DEVICE bool operator<(const T& a, const T& b) { return lt(a, b); }        \
  SPARSETIR_DEVICE bool operator<=(const T& a, const T& b) { return le(a, b); }       \
  SPARSETIR_DEVICE bool operator>(const T& a, const T& b) { return gt(a, b); }        \
  SPARSETIR_DEVICE bool operator>=(const T& a, const T& b) { return ge(a, b); }
SPARSETIR_OPERATORS(@T@, __hadd, __hsub, __hmul, __hdiv, __hneg, __heq, __hneu, __hlt, __hle, __hgt, __hge,
                    @T@(1.0f))
SPARSETIR_OPERATORS(@T2@, __hadd2, __hsub2, __hmul2, __h2div, __hneg2, __hbeq2, __hbneu2, __hblt2, __hble2, __hbgt2,
                    __hbge2, __@N@2@N2@(@T@(1.0f)))
#undef SPARSETIR_OPERATORS

// Atomics: a compare-and-swap loop on the bits (a pair as one 32-bit word).
SPARSETIR_DEVICE @T@ atomicAdd(@T@* p, @T@ v) {
  unsigned short old = __atomic_load_n(&p->__x, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&p->__x, &old, __hadd(@T@_raw{old}, v).__x, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  return @T@_raw{old};
}
SPARSETIR_DEVICE @T2@ atomicAdd(@T2@* p, @T2@ v) {
  uint32_t* word = (uint32_t*)p;
  uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED), next;
  @T2@ value;
  do {
    memcpy(&value, &old, 4);
    const @T2@ sum = __hadd2(value, v);
    memcpy(&next, &sum, 4);
  } while (!__atomic_compare_exchange_n(word, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return value;
}
)LIBRARY";

// After both types.
inline constexpr const char* kSimtFloat16Names = R"LIBRARY(
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7c00u)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7fffu)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7bffu)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000u)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000u)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3c00u)
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7f80u)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7fffu)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7f7fu)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000u)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000u)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3f80u)
)LIBRARY";

// The library as pasted: the common part, both types, the names.
const std::string& SimtFloat16Library();

// `text_template` with each placeholder of `names` (in order: a placeholder
// that contains another comes first) replaced by its name.
std::string InstantiateLibrary(const char* text_template,
                               const std::vector<std::pair<std::string, std::string>>& names);

}  // namespace sparsetir
