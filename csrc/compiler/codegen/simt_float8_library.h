// CUDA's cuda_fp8.h for hand-written kernels under the SIMT emulator: the
// 8-bit formats E4M3 (bias 7, no infinity, NaN S.1111.111, largest 448) and
// E5M2 (bias 15, IEEE-like, largest 57344), their storage types, the
// conversion functions (__nv_cvt_*), and __nv_fp8_e4m3 / __nv_fp8_e5m2 with
// their pairs and quads, whose constructors and conversions are all explicit
// as in CUDA. cuda_fp8.h defines no arithmetic on them: kernels convert to
// __half or float. Pasted after the 16-bit float library (cuda_fp8.h
// includes cuda_fp16.h and cuda_bf16.h).
//
// Conversions to 8 bits round to nearest even, exactly, from a double (a
// float or a 16-bit value converts exactly to double first). What lies
// beyond the largest value plus half a step overflows: to the largest value
// with __NV_SATFINITE (the constructors' mode; infinity too), else to NaN
// (E4M3) or infinity (E5M2). A NaN stays NaN (a float's loses its sign);
// the sign of everything else is kept (-0 too). Conversions from 8 bits are
// exact; a NaN becomes the 16-bit canonical NaN.
#pragma once

#include <string>

namespace sparsetir {

// The formats' conversions, once.
inline constexpr const char* kSimtFloat8Common = R"LIBRARY(
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

// Code = (exponent + bias - 1) 2^M + q, with q the value scaled to M + 1
// significant bits at its exponent (the subnormals' at the least one) and
// rounded to nearest even: a q that carries into the next binade lands on
// that binade's first code, so that codes count up with the value.
static inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t saturate,
                                                       __nv_fp8_interpretation_t format) {
  const bool e4m3 = format == __NV_E4M3;
  const int mantissa_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const unsigned largest = e4m3 ? 0x7Eu : 0x7Bu;
  uint64_t bits;
  memcpy(&bits, &x, 8);
  const unsigned sign = (unsigned)(bits >> 63) << 7;
  // E5M2 keeps a NaN's first significand bit (quiet either way).
  if (x != x) return (__nv_fp8_storage_t)(sign | (e4m3 ? 0x7Fu : 0x7Eu | (unsigned)(bits >> 50 & 1u)));
  const double a = fabs(x);
  unsigned code = largest + 1u;  // infinity overflows
  if (!isinf(a)) {
    int e = 0;
    frexp(a, &e);  // a = f 2^e with f in [0.5, 1)
    const int exponent = a == 0.0 || e - 1 < 1 - bias ? 1 - bias : e - 1;
    const double q = nearbyint(ldexp(a, mantissa_bits - exponent));
    const double scaled = (double)(exponent + bias - 1) * (1 << mantissa_bits) + q;
    code = scaled > (double)largest ? largest + 1u : (unsigned)scaled;
  }
  if (code > largest) code = saturate == __NV_SATFINITE ? largest : (e4m3 ? 0x7Fu : 0x7Cu);
  return (__nv_fp8_storage_t)(sign | code);
}
static inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t saturate,
                                                      __nv_fp8_interpretation_t format) {
  // A NaN as CUDA makes it canonical first (0x7FFFFFFF: positive, every bit set).
  return __nv_cvt_double_to_fp8(x != x ? (double)__int_as_float(0x7FFFFFFF) : (double)x, saturate, format);
}
// Two values, the first (x) in the low byte.
template <typename V, typename Convert>
static inline __nv_fp8x2_storage_t sparsetir_fp8_pair(V x, V y, Convert convert) {
  return (__nv_fp8x2_storage_t)(convert(y) << 8 | convert(x));
}
static inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t saturate,
                                                            __nv_fp8_interpretation_t format) {
  return sparsetir_fp8_pair(x.x, x.y, [&](double v) { return __nv_cvt_double_to_fp8(v, saturate, format); });
}
static inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t saturate,
                                                           __nv_fp8_interpretation_t format) {
  return sparsetir_fp8_pair(x.x, x.y, [&](float v) { return __nv_cvt_float_to_fp8(v, saturate, format); });
}
static inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t saturate,
                                                        __nv_fp8_interpretation_t format) {
  return __nv_cvt_float_to_fp8(sparsetir_half_to_float(x.x), saturate, format);
}
static inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t saturate,
                                                             __nv_fp8_interpretation_t format) {
  return sparsetir_fp8_pair(x.x, x.y, [&](unsigned short v) {
    return __nv_cvt_halfraw_to_fp8(__half_raw{v}, saturate, format);
  });
}
static inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t saturate,
                                                            __nv_fp8_interpretation_t format) {
  return __nv_cvt_float_to_fp8(sparsetir_bf16_to_float(x.x), saturate, format);
}
static inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t saturate,
                                                                 __nv_fp8_interpretation_t format) {
  return sparsetir_fp8_pair(x.x, x.y, [&](unsigned short v) {
    return __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{v}, saturate, format);
  });
}

// The value of an 8-bit code, exactly (a float holds every one).
static inline float sparsetir_fp8_to_float(__nv_fp8_storage_t x, __nv_fp8_interpretation_t format) {
  const bool e4m3 = format == __NV_E4M3;
  const int mantissa_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const unsigned magnitude = x & 0x7Fu;
  const float sign = x & 0x80u ? -1.0f : 1.0f;
  if (e4m3 ? magnitude == 0x7Fu : magnitude > 0x7Cu) return NAN;
  if (!e4m3 && magnitude == 0x7Cu) return sign * INFINITY;
  const int exponent = (int)(magnitude >> mantissa_bits), fraction = (int)(magnitude & ((1u << mantissa_bits) - 1u));
  return exponent == 0 ? sign * ldexpf((float)fraction, 1 - bias - mantissa_bits)
                       : sign * ldexpf((float)((1 << mantissa_bits) + fraction), exponent - bias - mantissa_bits);
}
static inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t format) {
  const float f = sparsetir_fp8_to_float(x, format);
  return __half_raw{f != f ? (unsigned short)0x7FFFu : sparsetir_float_to_half(f)};
}
static inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t format) {
  return __half2_raw{__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x & 0xFFu), format).x,
                     __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x >> 8), format).x};
}
)LIBRARY";

// Per format: @T@ its name in the types' names (e4m3, e5m2), @I@ its
// interpretation (__NV_E4M3, __NV_E5M2).
inline constexpr const char* kSimtFloat8Type = R"LIBRARY(
struct __attribute__((aligned(1))) __nv_fp8_@T@ {
  __nv_fp8_storage_t __x;
  __nv_fp8_@T@() = default;
  explicit __nv_fp8_@T@(const __half f) : __x(__nv_cvt_halfraw_to_fp8(f, __NV_SATFINITE, @I@)) {}
  explicit __nv_fp8_@T@(const __nv_bfloat16 f) : __x(__nv_cvt_bfloat16raw_to_fp8(f, __NV_SATFINITE, @I@)) {}
  explicit __nv_fp8_@T@(const float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, @I@)) {}
  explicit __nv_fp8_@T@(const double f) : __x(__nv_cvt_double_to_fp8(f, __NV_SATFINITE, @I@)) {}
  // Integers through float, as CUDA converts them.
  explicit __nv_fp8_@T@(const unsigned short v) : __nv_fp8_@T@((float)v) {}
  explicit __nv_fp8_@T@(const unsigned int v) : __nv_fp8_@T@((float)v) {}
  explicit __nv_fp8_@T@(const unsigned long v) : __nv_fp8_@T@((float)v) {}
  explicit __nv_fp8_@T@(const unsigned long long v) : __nv_fp8_@T@((float)v) {}
  explicit __nv_fp8_@T@(const short v) : __nv_fp8_@T@((float)v) {}
  explicit __nv_fp8_@T@(const int v) : __nv_fp8_@T@((float)v) {}
  explicit __nv_fp8_@T@(const long v) : __nv_fp8_@T@((float)v) {}
  explicit __nv_fp8_@T@(const long long v) : __nv_fp8_@T@((float)v) {}
  explicit operator __half() const { return __half(__nv_cvt_fp8_to_halfraw(__x, @I@)); }
  explicit operator float() const { return sparsetir_fp8_to_float(__x, @I@); }
  explicit operator double() const { return (double)sparsetir_fp8_to_float(__x, @I@); }
  explicit operator __nv_bfloat16() const { return __float2bfloat16_rz(sparsetir_fp8_to_float(__x, @I@)); }
  // To integers: toward zero, saturated, NaN to 0.
  template <typename I> I sparsetir_integer() const {
    return sparsetir_to_integer<I>(truncf(sparsetir_fp8_to_float(__x, @I@)));
  }
  explicit operator unsigned char() const { return sparsetir_integer<unsigned char>(); }
  explicit operator unsigned short() const { return sparsetir_integer<unsigned short>(); }
  explicit operator unsigned int() const { return sparsetir_integer<unsigned int>(); }
  explicit operator unsigned long() const { return sparsetir_integer<unsigned long>(); }
  explicit operator unsigned long long() const { return sparsetir_integer<unsigned long long>(); }
  explicit operator signed char() const { return sparsetir_integer<signed char>(); }
  explicit operator char() const { return sparsetir_integer<char>(); }
  explicit operator short() const { return sparsetir_integer<short>(); }
  explicit operator int() const { return sparsetir_integer<int>(); }
  explicit operator long() const { return sparsetir_integer<long>(); }
  explicit operator long long() const { return sparsetir_integer<long long>(); }
  // Both zeros are false.
  explicit operator bool() const { return (__x & 0x7Fu) != 0; }
};

// Two values, the first in the low byte.
struct __attribute__((aligned(2))) __nv_fp8x2_@T@ {
  __nv_fp8x2_storage_t __x;
  __nv_fp8x2_@T@() = default;
  explicit __nv_fp8x2_@T@(const __half2 f) : __x(__nv_cvt_halfraw2_to_fp8x2(f, __NV_SATFINITE, @I@)) {}
  explicit __nv_fp8x2_@T@(const __nv_bfloat162 f) : __x(__nv_cvt_bfloat16raw2_to_fp8x2(f, __NV_SATFINITE, @I@)) {}
  explicit __nv_fp8x2_@T@(const float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, @I@)) {}
  explicit __nv_fp8x2_@T@(const double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, @I@)) {}
  explicit operator __half2() const { return __half2(__nv_cvt_fp8x2_to_halfraw2(__x, @I@)); }
  explicit operator float2() const {
    return make_float2(sparsetir_fp8_to_float((__nv_fp8_storage_t)(__x & 0xFFu), @I@),
                       sparsetir_fp8_to_float((__nv_fp8_storage_t)(__x >> 8), @I@));
  }
};

// Four values, the first in the low byte.
struct __attribute__((aligned(4))) __nv_fp8x4_@T@ {
  __nv_fp8x4_storage_t __x;
  __nv_fp8x4_@T@() = default;
  explicit __nv_fp8x4_@T@(const __half2 lo, const __half2 hi)
      : __x(__nv_cvt_halfraw2_to_fp8x2(lo, __NV_SATFINITE, @I@) |
            (__nv_fp8x4_storage_t)__nv_cvt_halfraw2_to_fp8x2(hi, __NV_SATFINITE, @I@) << 16) {}
  explicit __nv_fp8x4_@T@(const __nv_bfloat162 lo, const __nv_bfloat162 hi)
      : __x(__nv_cvt_bfloat16raw2_to_fp8x2(lo, __NV_SATFINITE, @I@) |
            (__nv_fp8x4_storage_t)__nv_cvt_bfloat16raw2_to_fp8x2(hi, __NV_SATFINITE, @I@) << 16) {}
  explicit __nv_fp8x4_@T@(const float4 f)
      : __x(__nv_cvt_float2_to_fp8x2(make_float2(f.x, f.y), __NV_SATFINITE, @I@) |
            (__nv_fp8x4_storage_t)__nv_cvt_float2_to_fp8x2(make_float2(f.z, f.w), __NV_SATFINITE, @I@) << 16) {}
  explicit __nv_fp8x4_@T@(const double4 f)
      : __x(__nv_cvt_double2_to_fp8x2(make_double2(f.x, f.y), __NV_SATFINITE, @I@) |
            (__nv_fp8x4_storage_t)__nv_cvt_double2_to_fp8x2(make_double2(f.z, f.w), __NV_SATFINITE, @I@) << 16) {}
  explicit operator float4() const {
    return make_float4(sparsetir_fp8_to_float((__nv_fp8_storage_t)(__x & 0xFFu), @I@),
                       sparsetir_fp8_to_float((__nv_fp8_storage_t)(__x >> 8 & 0xFFu), @I@),
                       sparsetir_fp8_to_float((__nv_fp8_storage_t)(__x >> 16 & 0xFFu), @I@),
                       sparsetir_fp8_to_float((__nv_fp8_storage_t)(__x >> 24), @I@));
  }
};

template <> struct sparsetir_element<__nv_fp8x2_@T@> { typedef __nv_fp8_@T@ type; };
template <> struct sparsetir_element<__nv_fp8x4_@T@> { typedef __nv_fp8_@T@ type; };
// A tensor of this format reaches a parameter of it, its pairs or quads, or
// of 8-bit integers (its bits).
template <typename A>
struct sparsetir_same_scalar<A, __nv_fp8_@T@>
    : std::integral_constant<bool, std::is_same<A, __nv_fp8_@T@>::value ||
                                       (std::is_integral<A>::value && !std::is_same<A, bool>::value &&
                                        sizeof(A) == 1)> {};
)LIBRARY";

// The library as pasted: the common part, then both formats.
const std::string& SimtFloat8Library();

}  // namespace sparsetir
