// CUDA's math API beyond C's <math.h>, for hand-written kernels under the
// SIMT emulator: the integer dot products of packed bytes (__dp4a, __dp2a_*),
// the inverse error functions, the normal distribution, the scaled
// complementary error function, sin / cos of pi x, and the Euclidean norms.
// Pasted after simt_device_library.h.
//
// The float forms compute in double (long double for erfcx) and round once,
// which is within CUDA's documented error bounds for each (a few ulp); the
// exact cases CUDA documents are exact here too (sinpi of an integer is a
// zero of the integer's sign, cospi of a half-integer is +0, erfinv(+-1) is
// +-infinity).
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtDeviceMath = R"LIBRARY(
// c plus the products of the four byte pairs of a and b (signed or
// unsigned as the operands), wrapping as the GPU's 32-bit adds do.
static inline int __dp4a(int a, int b, int c) {
  unsigned int sum = (unsigned int)c;
  for (int k = 0; k < 4; ++k) sum += (unsigned int)((int)(signed char)(a >> 8 * k) * (int)(signed char)(b >> 8 * k));
  return (int)sum;
}
static inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
  for (int k = 0; k < 4; ++k) c += (a >> 8 * k & 0xFFu) * (b >> 8 * k & 0xFFu);
  return c;
}
// c plus the two 16-bit halves of a times bytes 0, 1 (lo) or 2, 3 (hi) of b.
static inline int sparsetir_dp2a(int a, int b, int c, int first_byte) {
  unsigned int sum = (unsigned int)c;
  for (int k = 0; k < 2; ++k) {
    sum += (unsigned int)((int)(short)(a >> 16 * k) * (int)(signed char)(b >> 8 * (first_byte + k)));
  }
  return (int)sum;
}
static inline unsigned int sparsetir_dp2a(unsigned int a, unsigned int b, unsigned int c, int first_byte) {
  for (int k = 0; k < 2; ++k) c += (a >> 16 * k & 0xFFFFu) * (b >> 8 * (first_byte + k) & 0xFFu);
  return c;
}
static inline int __dp2a_lo(int a, int b, int c) { return sparsetir_dp2a(a, b, c, 0); }
static inline int __dp2a_hi(int a, int b, int c) { return sparsetir_dp2a(a, b, c, 2); }
static inline unsigned int __dp2a_lo(unsigned int a, unsigned int b, unsigned int c) {
  return sparsetir_dp2a(a, b, c, 0);
}
static inline unsigned int __dp2a_hi(unsigned int a, unsigned int b, unsigned int c) {
  return sparsetir_dp2a(a, b, c, 2);
}

// The root of erf(x) = y (erfc(x) = z for the complement) by Newton steps
// kept inside a shrinking bracket; the complement's form keeps its accuracy
// where z is tiny (y near 1).
static inline double sparsetir_erf_root(double target, bool complement) {
  double lo = complement ? 0.0 : -6.0, hi = complement ? 27.3 : 6.0;
  double x = complement ? sqrt(-log(target)) : target * 0.886226925452758;
  for (int i = 0; i < 200 && hi - lo > 0; ++i) {
    const double slope = 1.1283791670955126 * exp(-x * x);  // erf'(x)
    const double miss = complement ? target - erfc(x) : erf(x) - target;  // grows with x
    if (miss == 0) return x;
    if (miss > 0) hi = x; else lo = x;
    double next = slope > 0 ? x - miss / slope : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (next == x) return x;
    x = next;
  }
  return x;
}
static inline double erfcinv(double z) {
  if (!(z > 0 && z < 2)) return z == 0 ? INFINITY : z == 2 ? -INFINITY : NAN;
  if (z > 1) return -erfcinv(2 - z);
  return z > 0.5 ? sparsetir_erf_root(1 - z, false) : sparsetir_erf_root(z, true);
}
static inline double erfinv(double y) {
  if (!(y > -1 && y < 1)) return y == 1 ? INFINITY : y == -1 ? -INFINITY : NAN;
  return fabs(y) < 0.5 ? sparsetir_erf_root(y, false) : (y > 0 ? erfcinv(1 - y) : -erfcinv(1 + y));
}
static inline double normcdf(double x) { return 0.5 * erfc(-x * 0.7071067811865476); }
static inline double normcdfinv(double p) { return -1.4142135623730951 * erfcinv(2 * p); }
// exp(x^2) erfc(x): past x = 100 the asymptotic series, where the product
// would underflow.
static inline double erfcx(double x) {
  if (x != x) return x;
  if (x > 100) {
    const double r = 1 / (x * x);
    return 0.5641895835477563 / x * (1 - 0.5 * r + 0.75 * r * r - 1.875 * r * r * r);
  }
  return (double)(expl((long double)x * x) * erfcl((long double)x));
}
static inline float erfinvf(float y) { return (float)erfinv(y); }
static inline float erfcinvf(float z) { return (float)erfcinv(z); }
static inline float normcdff(float x) { return (float)normcdf(x); }
static inline float normcdfinvf(float p) { return (float)normcdfinv(p); }
static inline float erfcxf(float x) { return (float)erfcx(x); }

// sin(pi x) and cos(pi x) from x reduced to [-1, 1] exactly. C23 names
// sinpi and cospi too (a newer glibc declares them): macros take the names,
// as for __expf.
static inline double sparsetir_sinpi(double x) {
  if (isinf(x)) return NAN;
  const double r = x - 2 * nearbyint(0.5 * x);
  if (r == 0 || fabs(r) == 1) return copysign(0.0, x);
  return sin(3.141592653589793 * r);
}
static inline double sparsetir_cospi(double x) {
  if (isinf(x)) return NAN;
  const double r = fabs(x - 2 * nearbyint(0.5 * x));
  return r == 0.5 ? 0.0 : cos(3.141592653589793 * r);
}
static inline float sparsetir_sinpif(float x) { return (float)sparsetir_sinpi(x); }
static inline float sparsetir_cospif(float x) { return (float)sparsetir_cospi(x); }
#define sinpi(x) sparsetir_sinpi(x)
#define cospi(x) sparsetir_cospi(x)
#define sinpif(x) sparsetir_sinpif(x)
#define cospif(x) sparsetir_cospif(x)
static inline void sincospi(double x, double* s, double* c) { *s = sparsetir_sinpi(x), *c = sparsetir_cospi(x); }
static inline void sincospif(float x, float* s, float* c) { *s = sparsetir_sinpif(x), *c = sparsetir_cospif(x); }

// Euclidean norms, and their reciprocals; infinite where any operand is
// (before a NaN), as C's hypot.
template <typename T> static inline T sparsetir_norm(int n, const T* a) {
  long double sum = 0;
  bool infinite = false;
  for (int i = 0; i < n; ++i) {
    infinite |= isinf(a[i]);
    sum += (long double)a[i] * a[i];
  }
  return infinite ? (T)INFINITY : (T)sqrtl(sum);
}
static inline double norm(int n, const double* a) { return sparsetir_norm(n, a); }
static inline double rnorm(int n, const double* a) { return 1 / sparsetir_norm(n, a); }
static inline float normf(int n, const float* a) { return sparsetir_norm(n, a); }
static inline float rnormf(int n, const float* a) { return (float)(1 / (double)sparsetir_norm(n, a)); }
static inline double norm3d(double a, double b, double c) { const double v[3] = {a, b, c}; return norm(3, v); }
static inline double norm4d(double a, double b, double c, double d) {
  const double v[4] = {a, b, c, d};
  return norm(4, v);
}
static inline double rnorm3d(double a, double b, double c) { return 1 / norm3d(a, b, c); }
static inline double rnorm4d(double a, double b, double c, double d) { return 1 / norm4d(a, b, c, d); }
static inline double rhypot(double a, double b) { return 1 / hypot(a, b); }
static inline float norm3df(float a, float b, float c) { return (float)norm3d(a, b, c); }
static inline float norm4df(float a, float b, float c, float d) { return (float)norm4d(a, b, c, d); }
static inline float rnorm3df(float a, float b, float c) { return (float)rnorm3d(a, b, c); }
static inline float rnorm4df(float a, float b, float c, float d) { return (float)rnorm4d(a, b, c, d); }
static inline float rhypotf(float a, float b) { return (float)rhypot(a, b); }
static inline float fdividef(float x, float y) { return x / y; }
)LIBRARY";

}  // namespace sparsetir
