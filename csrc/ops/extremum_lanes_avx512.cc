// spmm's max/min backward rows with AVX-512 (x86-64-v4) float32 vectors:
// 16 lanes, lane masks in k registers, so a block of any width is whole
// vectors plus one masked load (extremum_rows.h).
#if defined(__x86_64__)
// Before every include: the functions below, and the loops of
// extremum_rows.h they instantiate, are compiled for this level only.
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi,bmi2,popcnt")
#include <immintrin.h>

#include "extremum_rows.h"

namespace sparsetir::ops::extremum {
namespace {

struct Avx512Lanes {
  using scalar_t = float;
  using acc_t = float;
  using Vec = __m512;
  static constexpr int kLanes = 16;

  static bool Fits(int64_t) { return true; }
  static __mmask16 First(int64_t n) { return n >= kLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }
  static Vec Load(const float* p, int64_t n) {
    return n >= kLanes ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(First(n), p);
  }
  static Vec Broadcast(float v) { return _mm512_set1_ps(v); }
  static Vec Product(Vec v, Vec x) { return _mm512_mul_ps(v, x); }
  static Vec Multiply(Vec x, Vec v) { return _mm512_mul_ps(x, v); }
  static uint64_t Equal(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  // A masked add, never a fused multiply-add: every level rounds the
  // product, then the sum.
  static Vec AddWhere(Vec acc, uint64_t bits, Vec x) { return _mm512_mask_add_ps(acc, __mmask16(bits), acc, x); }
  static void Store(float* p, Vec v, int64_t n) {
    if (n >= kLanes) {
      _mm512_storeu_ps(p, v);
    } else {
      _mm512_mask_storeu_ps(p, First(n), v);
    }
  }
};

}  // namespace

SPARSETIR_EXTREMUM_DEFINE_LEVEL(Avx512, Avx512Lanes)

}  // namespace sparsetir::ops::extremum
#endif
