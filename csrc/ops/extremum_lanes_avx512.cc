// spmm's max/min backward rows with AVX-512 (x86-64-v4) vectors: 16 float or
// 8 double lanes, lane masks in k registers, so a block of any width is
// whole vectors plus one masked load (extremum_rows.h).
#if defined(__x86_64__)
// Before every include: the functions below, and the loops of
// extremum_rows.h they instantiate, are compiled for this level only.
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi,bmi2,popcnt")
#include <immintrin.h>

#include "extremum_rows.h"

namespace sparsetir::ops::extremum {
namespace {

// What both widths share: Fits, and the lanes below n as a mask.
template <int lanes>
struct Avx512Masks {
  static constexpr int kLanes = lanes;
  static bool Fits(int64_t) { return true; }
  static unsigned First(int64_t n) { return n >= kLanes ? (1u << kLanes) - 1 : (1u << n) - 1; }
};

template <typename T>
struct Avx512Lanes;

template <>
struct Avx512Lanes<float> : Avx512Masks<16> {
  using scalar_t = float;
  using acc_t = float;
  using Vec = __m512;
  static Vec Load(const float* p, int64_t n) {
    return n >= kLanes ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(__mmask16(First(n)), p);
  }
  static Vec Broadcast(float v) { return _mm512_set1_ps(v); }
  static Vec Product(Vec v, Vec x) { return _mm512_mul_ps(v, x); }
  static Vec Multiply(Vec x, Vec v) { return _mm512_mul_ps(x, v); }
  static uint64_t Equal(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  // A masked add, never a fused multiply-add: every level rounds the
  // product, then the sum.
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) { return _mm512_mask_add_ps(acc, __mmask16(bits), acc, x); }
  static void Store(float* p, Vec v, int64_t n) {
    if (n >= kLanes) return _mm512_storeu_ps(p, v);
    _mm512_mask_storeu_ps(p, __mmask16(First(n)), v);
  }
};

template <>
struct Avx512Lanes<double> : Avx512Masks<8> {
  using scalar_t = double;
  using acc_t = double;
  using Vec = __m512d;
  static Vec Load(const double* p, int64_t n) {
    return n >= kLanes ? _mm512_loadu_pd(p) : _mm512_maskz_loadu_pd(__mmask8(First(n)), p);
  }
  static Vec Broadcast(double v) { return _mm512_set1_pd(v); }
  static Vec Product(Vec v, Vec x) { return _mm512_mul_pd(v, x); }
  static Vec Multiply(Vec x, Vec v) { return _mm512_mul_pd(x, v); }
  static uint64_t Equal(Vec a, Vec b) { return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ); }
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) { return _mm512_mask_add_pd(acc, __mmask8(bits), acc, x); }
  static void Store(double* p, Vec v, int64_t n) {
    if (n >= kLanes) return _mm512_storeu_pd(p, v);
    _mm512_mask_storeu_pd(p, __mmask8(First(n)), v);
  }
};

}  // namespace

SPARSETIR_EXTREMUM_DEFINE_LEVEL(Avx512, Avx512Lanes)

}  // namespace sparsetir::ops::extremum
#endif
