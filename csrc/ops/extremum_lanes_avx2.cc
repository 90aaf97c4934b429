// spmm's max/min backward rows with AVX2 (x86-64-v3) float32 vectors:
// 8 lanes; a block whose width is not a multiple of 8 takes the scalar
// loops (extremum_rows.h).
#if defined(__x86_64__)
// Before every include: the functions below, and the loops of
// extremum_rows.h they instantiate, are compiled for this level only.
#pragma GCC target("avx2,fma,bmi,bmi2,popcnt,f16c")
#include <immintrin.h>

#include "extremum_rows.h"

namespace sparsetir::ops::extremum {
namespace {

struct Avx2Lanes {
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
  // Lane l of the selection is all ones where bit l is set; x is zeroed
  // elsewhere, and acc + 0 is acc (acc is never -0: it starts at +0).
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) {
    const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i chosen =
        _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits & 0xff)), lane_bit), lane_bit);
    return _mm256_add_ps(acc, _mm256_and_ps(_mm256_castsi256_ps(chosen), x));
  }
  static void Store(float* p, Vec v, int64_t) { _mm256_storeu_ps(p, v); }
};

}  // namespace

SPARSETIR_EXTREMUM_DEFINE_LEVEL(Avx2, Avx2Lanes)

}  // namespace sparsetir::ops::extremum
#endif
