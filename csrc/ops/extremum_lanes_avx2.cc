// spmm's max/min backward rows with AVX2 (x86-64-v3) vectors: 8 float or 4
// double lanes; a block whose width is not a multiple of the lanes takes the
// scalar loops (extremum_rows.h).
#if defined(__x86_64__)
// Before every include: the functions below, and the loops of
// extremum_rows.h they instantiate, are compiled for this level only.
#pragma GCC target("avx2,fma,bmi,bmi2,popcnt,f16c")
#include <immintrin.h>

#include "extremum_rows.h"

namespace sparsetir::ops::extremum {
namespace {

template <typename T>
struct Avx2Lanes;

// AddWhere: lane l of the selection is all ones where bit l is set; x is
// zeroed elsewhere, and acc + 0 is acc (acc is never -0: it starts at +0).
template <>
struct Avx2Lanes<float> {
  using scalar_t = float;
  using acc_t = float;
  using Vec = __m256;
  static constexpr int kLanes = 8;
  static bool Fits(int64_t kb) { return kb % kLanes == 0; }
  static Vec Load(const float* p, int64_t) { return _mm256_loadu_ps(p); }
  static Vec Broadcast(float v) { return _mm256_set1_ps(v); }
  static Vec Product(Vec v, Vec x) { return _mm256_mul_ps(v, x); }
  static Vec Multiply(Vec x, Vec v) { return _mm256_mul_ps(x, v); }
  static uint64_t Equal(Vec a, Vec b) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)));
  }
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) {
    const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i chosen =
        _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits & 0xff)), lane_bit), lane_bit);
    return _mm256_add_ps(acc, _mm256_and_ps(_mm256_castsi256_ps(chosen), x));
  }
  static void Store(float* p, Vec v, int64_t) { _mm256_storeu_ps(p, v); }
};

template <>
struct Avx2Lanes<double> {
  using scalar_t = double;
  using acc_t = double;
  using Vec = __m256d;
  static constexpr int kLanes = 4;
  static bool Fits(int64_t kb) { return kb % kLanes == 0; }
  static Vec Load(const double* p, int64_t) { return _mm256_loadu_pd(p); }
  static Vec Broadcast(double v) { return _mm256_set1_pd(v); }
  static Vec Product(Vec v, Vec x) { return _mm256_mul_pd(v, x); }
  static Vec Multiply(Vec x, Vec v) { return _mm256_mul_pd(x, v); }
  static uint64_t Equal(Vec a, Vec b) {
    return static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(a, b, _CMP_EQ_OQ)));
  }
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) {
    const __m256i lane_bit = _mm256_setr_epi64x(1, 2, 4, 8);
    const __m256i chosen =
        _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(static_cast<int64_t>(bits & 0xf)), lane_bit), lane_bit);
    return _mm256_add_pd(acc, _mm256_and_pd(_mm256_castsi256_pd(chosen), x));
  }
  static void Store(double* p, Vec v, int64_t) { _mm256_storeu_pd(p, v); }
};

}  // namespace

SPARSETIR_EXTREMUM_DEFINE_LEVEL(Avx2, Avx2Lanes)

}  // namespace sparsetir::ops::extremum
#endif
