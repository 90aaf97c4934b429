// spmm's max/min backward rows with AVX-512 (x86-64-v4) vectors: 16 float,
// 8 double or 16 bfloat16 / float16 lanes (computed in float), lane masks in
// k registers, so a block of any width is whole vectors plus one masked load
// (extremum_rows.h).
#if defined(__x86_64__)
// Before every include: the functions below, and the loops of
// extremum_rows.h they instantiate, are compiled for this level only.
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi,bmi2,popcnt")
// GCC's AVX-512 intrinsics start some results from a deliberately undefined
// vector (_mm512_undefined_*), which -Wmaybe-uninitialized reports.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// GCC 12 at -O1 with -fsanitize=address (the sanitized build's flags,
// tools/test_sanitized.sh) miscompiles these loops: some rows get wrong
// winners, which depend on what the stack held before. The same source is
// right at -O0 and -O2, at -O1 without ASan, and with clang; so in a GCC
// ASan build this file alone is optimized as the normal build optimizes it.
#if defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#pragma GCC optimize("O2")
#endif
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
  static float Widen(float x) { return x; }
  static Vec Zero() { return _mm512_setzero_ps(); }
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
  static double Widen(double x) { return x; }
  static Vec Zero() { return _mm512_setzero_pd(); }
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

// bfloat16 and float16, as bit patterns in float32 lanes. Product rounds to
// 16 bits (nearest even) and widens again, as the forward's 16-bit output
// rounded; the rest is the float policy's.
template <typename Format>
struct Avx512Narrow : Avx512Lanes<float> {
  using scalar_t = uint16_t;
  static Vec Load(const uint16_t* p, int64_t n) {
    const __m256i bits = n >= kLanes ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                     : _mm256_maskz_loadu_epi16(__mmask16(First(n)), p);
    return Format::Widen(bits);
  }
  static float Widen(uint16_t x) { return _mm512_cvtss_f32(Format::Widen(_mm256_set1_epi16(static_cast<short>(x)))); }
  static Vec Broadcast(uint16_t v) { return _mm512_set1_ps(Widen(v)); }
  static Vec Product(Vec v, Vec x) { return Format::Round(_mm512_mul_ps(v, x)); }
};

struct Bf16Bits {
  static __m512 Widen(__m256i bits) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16)); }
  // Nearest even: add 0x7fff plus the lowest kept bit, clear the low half;
  // NaN lanes stay NaN (the addition could carry them into the sign).
  static __m512 Round(__m512 f) {
    const __m512i x = _mm512_castps_si512(f);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i up = _mm512_add_epi32(x, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
    const __m512 rounded = _mm512_castsi512_ps(_mm512_and_si512(up, _mm512_set1_epi32(int(0xffff0000u))));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q), rounded, f);
  }
};

struct HalfBits {
  static __m512 Widen(__m256i bits) { return _mm512_cvtph_ps(bits); }
  static __m512 Round(__m512 f) { return _mm512_cvtph_ps(_mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT)); }
};

template <>
struct Avx512Lanes<Bf16> : Avx512Narrow<Bf16Bits> {};
template <>
struct Avx512Lanes<Half> : Avx512Narrow<HalfBits> {};

}  // namespace

SPARSETIR_EXTREMUM_DEFINE_LEVEL(Avx512, Avx512Lanes)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx512, float)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx512, double)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx512, Bf16)
SPARSETIR_EXTREMUM_INSTANTIATE(Avx512, Half)

}  // namespace sparsetir::ops::extremum
#endif
