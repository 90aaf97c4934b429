// spmm's max/min backward rows with AVX2 (x86-64-v3) vectors: 8 float, 4
// double or 8 bfloat16 / float16 lanes (computed in float); a block whose
// width is not a multiple of the lanes takes the scalar loops
// (extremum_rows.h).
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
  static float Widen(float x) { return x; }
  static Vec Zero() { return _mm256_setzero_ps(); }
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
  static double Widen(double x) { return x; }
  static Vec Zero() { return _mm256_setzero_pd(); }
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

// bfloat16 and float16, as bit patterns in float32 lanes (F16C converts
// float16). Product rounds to 16 bits (nearest even) and widens again, as
// the forward's 16-bit output rounded; the rest is the float policy's.
template <typename Format>
struct Avx2Narrow : Avx2Lanes<float> {
  using scalar_t = uint16_t;
  static Vec Load(const uint16_t* p, int64_t) {
    return Format::Widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float Widen(uint16_t x) { return _mm256_cvtss_f32(Format::Widen(_mm_set1_epi16(static_cast<short>(x)))); }
  static Vec Broadcast(uint16_t v) { return _mm256_set1_ps(Widen(v)); }
  static Vec Product(Vec v, Vec x) { return Format::Round(_mm256_mul_ps(v, x)); }
};

struct Bf16Bits {
  static __m256 Widen(__m128i bits) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16)); }
  // As the AVX-512 file's: nearest even, NaN lanes kept.
  static __m256 Round(__m256 f) {
    const __m256i x = _mm256_castps_si256(f);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i up = _mm256_add_epi32(x, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
    const __m256 rounded = _mm256_castsi256_ps(_mm256_and_si256(up, _mm256_set1_epi32(int(0xffff0000u))));
    return _mm256_blendv_ps(rounded, f, _mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  }
};

struct HalfBits {
  static __m256 Widen(__m128i bits) { return _mm256_cvtph_ps(bits); }
  static __m256 Round(__m256 f) { return _mm256_cvtph_ps(_mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT)); }
};

template <>
struct Avx2Lanes<Bf16> : Avx2Narrow<Bf16Bits> {};
template <>
struct Avx2Lanes<Half> : Avx2Narrow<HalfBits> {};

}  // namespace

SPARSETIR_EXTREMUM_DEFINE_LEVEL(Avx2, Avx2Lanes)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx2, float)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx2, double)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx2, Bf16)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx2, Half)

}  // namespace sparsetir::ops::extremum
#endif
