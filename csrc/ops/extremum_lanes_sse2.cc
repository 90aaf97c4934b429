// spmm's max/min backward rows with SSE2 vectors, the baseline of every
// x86-64 CPU (the generic level): 4 float or 2 double lanes; a block whose
// width is not a multiple of the lanes takes the scalar loops
// (extremum_rows.h).
#if defined(__x86_64__)
#include <emmintrin.h>

#include "extremum_rows.h"

namespace sparsetir::ops::extremum {
namespace {

template <typename T>
struct Sse2Lanes;

// AddWhere as in Avx2Lanes: x zeroed outside the chosen lanes, then added.
template <>
struct Sse2Lanes<float> {
  using scalar_t = float;
  using acc_t = float;
  using Vec = __m128;
  static constexpr int kLanes = 4;
  static bool Fits(int64_t kb) { return kb % kLanes == 0; }
  static Vec Load(const float* p, int64_t) { return _mm_loadu_ps(p); }
  static float Widen(float x) { return x; }
  static Vec Zero() { return _mm_setzero_ps(); }
  static Vec Broadcast(float v) { return _mm_set1_ps(v); }
  static Vec Product(Vec v, Vec x) { return _mm_mul_ps(v, x); }
  static Vec Multiply(Vec x, Vec v) { return _mm_mul_ps(x, v); }
  static uint64_t Equal(Vec a, Vec b) { return static_cast<unsigned>(_mm_movemask_ps(_mm_cmpeq_ps(a, b))); }
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) {
    const __m128i lane_bit = _mm_setr_epi32(1, 2, 4, 8);
    const __m128i chosen =
        _mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32(static_cast<int>(bits & 0xf)), lane_bit), lane_bit);
    return _mm_add_ps(acc, _mm_and_ps(_mm_castsi128_ps(chosen), x));
  }
  static void Store(float* p, Vec v, int64_t) { _mm_storeu_ps(p, v); }
};

template <>
struct Sse2Lanes<double> {
  using scalar_t = double;
  using acc_t = double;
  using Vec = __m128d;
  static constexpr int kLanes = 2;
  static bool Fits(int64_t kb) { return kb % kLanes == 0; }
  static Vec Load(const double* p, int64_t) { return _mm_loadu_pd(p); }
  static double Widen(double x) { return x; }
  static Vec Zero() { return _mm_setzero_pd(); }
  static Vec Broadcast(double v) { return _mm_set1_pd(v); }
  static Vec Product(Vec v, Vec x) { return _mm_mul_pd(v, x); }
  static Vec Multiply(Vec x, Vec v) { return _mm_mul_pd(x, v); }
  static uint64_t Equal(Vec a, Vec b) { return static_cast<unsigned>(_mm_movemask_pd(_mm_cmpeq_pd(a, b))); }
  // SSE2 compares no 64-bit integers: the two lanes' selections are built
  // from the bits (all ones = -1).
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) {
    const __m128i chosen = _mm_set_epi64x(-static_cast<int64_t>((bits >> 1) & 1), -static_cast<int64_t>(bits & 1));
    return _mm_add_pd(acc, _mm_and_pd(_mm_castsi128_pd(chosen), x));
  }
  static void Store(double* p, Vec v, int64_t) { _mm_storeu_pd(p, v); }
};

}  // namespace

SPARSETIR_EXTREMUM_DEFINE_LEVEL(Sse2, Sse2Lanes)
SPARSETIR_EXTREMUM_INSTANTIATE(Sse2, float)
SPARSETIR_EXTREMUM_INSTANTIATE(Sse2, double)

}  // namespace sparsetir::ops::extremum
#endif
