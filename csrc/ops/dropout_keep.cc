// The loops of dropout (dropout_keep.h), compiled once per x86-64 level:
// each level's functions carry its target attribute and inline the loops
// (`flatten`), so GCC vectorizes the 16 Philox lanes with that level's
// registers (one zmm, two ymm or four xmm per word), while nothing compiled
// for a higher level can be reached from a generic caller (the loops
// themselves have internal linkage, compiled for the baseline).
#include "dropout_keep.h"

#include <bit>

namespace sparsetir::ops::dropout {
namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53u;  // Philox4x32's round multipliers
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // and its key increments
constexpr uint32_t kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;
constexpr int kLanes = 16;

// One round on n counters held word by word (c0[l], c1[l], ... is counter
// l): the layout that lets GCC vectorize the lanes.
template <int n>
inline void Round(uint32_t (&c)[4][n], uint32_t k0, uint32_t k1) {
  for (int l = 0; l < n; ++l) {
    const uint64_t p0 = uint64_t{kMultiplier0} * c[0][l];
    const uint64_t p1 = uint64_t{kMultiplier1} * c[2][l];
    const uint32_t next0 = uint32_t(p1 >> 32) ^ c[1][l] ^ k0;
    const uint32_t next2 = uint32_t(p0 >> 32) ^ c[3][l] ^ k1;
    c[1][l] = uint32_t(p1);
    c[3][l] = uint32_t(p0);
    c[0][l] = next0;
    c[2][l] = next2;
  }
}

template <int n>
inline void Rounds(uint32_t (&c)[4][n], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < kRounds; ++r) {
    Round(c, k0, k1);
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
}

// All ones if a draw keeps its element (draw >= threshold), else zero. The
// comparison is a signed one of both sides offset by 2^31: SSE2 and AVX2
// compare signed 32-bit lanes only, and GCC does not vectorize an unsigned
// comparison there.
inline uint32_t KeptMask(uint32_t draw, uint32_t threshold) {
  return 0u - uint32_t(int32_t(draw ^ 0x80000000u) >= int32_t(threshold ^ 0x80000000u));
}

// `scale` where the mask is set, +0 elsewhere: the factor of an element, so
// that a dropped NaN or infinity gives NaN as in torch (x * 0).
inline float Factor(uint32_t mask, float scale) { return std::bit_cast<float>(std::bit_cast<uint32_t>(scale) & mask); }
inline double Factor(uint32_t mask, double scale) {
  return std::bit_cast<double>(std::bit_cast<uint64_t>(scale) & (uint64_t(mask) << 32 | mask));
}

// The 64 draws of block `block` (16 counters, 4 words each).
inline void Draw(uint64_t block, uint32_t k0, uint32_t k1, uint32_t (&c)[4][kLanes]) {
  const uint64_t counter = block * kLanes;
  for (int l = 0; l < kLanes; ++l) {
    c[0][l] = uint32_t(counter + l);
    c[1][l] = uint32_t((counter + l) >> 32);
    c[2][l] = 0;
    c[3][l] = 0;
  }
  Rounds(c, k0, k1);
}

inline void KeepLoop(uint64_t seed, int64_t first, int64_t count, uint32_t threshold, uint8_t* keep) {
  for (int64_t b = 0; b < count / kBlock; ++b) {
    uint32_t c[4][kLanes];
    Draw(uint64_t(first / kBlock + b), uint32_t(seed), uint32_t(seed >> 32), c);
    uint8_t* out = keep + b * kBlock;
    for (int w = 0; w < 4; ++w) {
      for (int l = 0; l < kLanes; ++l) out[w * kLanes + l] = uint8_t(KeptMask(c[w][l], threshold) & 1u);
    }
  }
}

// bfloat16 as its bit pattern: widened exactly, scaled in float32 and
// rounded to nearest even once, a NaN kept quiet; the bit operations GCC
// vectorizes, where c10::BFloat16's conversions stay scalar.
inline float WidenBf16(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

inline uint16_t NarrowBf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return uint16_t(f != f ? 0x7FC0u : rounded);
}

// float16 as its bit pattern, the same way. Every case is computed for all
// lanes and chosen by masks, not by `?:`: GCC would move a floating-point
// operation used by one case into a branch of its own (it may trap), and a
// loop with a branch is not vectorized. (The generic level has no F16C
// instructions, and this is as fast at the others.)
inline uint32_t Select(bool condition, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - uint32_t(condition);
  return (a & mask) | (b & ~mask);
}

inline float WidenHalf(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  const uint32_t normal = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  const uint32_t special = sign | 0x7F800000u | (mantissa << 13);  // infinity, NaN
  const float subnormal = std::bit_cast<float>(sign | 0x3F800000u) * float(mantissa) * 0x1p-24f;
  return std::bit_cast<float>(
      Select(exponent == 0, std::bit_cast<uint32_t>(subnormal), Select(exponent == 0x1F, special, normal)));
}

inline uint16_t NarrowHalf(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even.
  const uint32_t normal = (a - ((127u - 15u) << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13;
  // Below 2^-14: adding 0.5 leaves the value in units of 2^-24 in the low
  // mantissa bits, rounded to nearest even by the addition itself (2^-14
  // itself comes out as the smallest normal's bits).
  const uint32_t subnormal = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3F000000u;
  const uint32_t big = Select(a > 0x7F800000u, 0x7E00u, 0x7C00u);  // NaN, or infinity from 65520 up
  return uint16_t(sign | Select(a >= 0x477FF000u, big, Select(a < 0x38800000u, subnormal, normal)));
}

// The element formats: how a stored element widens to the type it is
// scaled in, and how the product is stored.
template <typename T>
struct Plain {
  using Storage = T;
  using Compute = T;
  static T Widen(T x) { return x; }
  static T Narrow(T x) { return x; }
};
struct Bf16 {
  using Storage = uint16_t;
  using Compute = float;
  static float Widen(uint16_t bits) { return WidenBf16(bits); }
  static uint16_t Narrow(float f) { return NarrowBf16(f); }
};
struct Half {
  using Storage = uint16_t;
  using Compute = float;
  static float Widen(uint16_t bits) { return WidenHalf(bits); }
  static uint16_t Narrow(float f) { return NarrowHalf(f); }
};

template <typename Format, typename Storage = typename Format::Storage, typename Compute = typename Format::Compute>
inline void ScaleLoop(const Storage* __restrict x, Storage* __restrict y, uint64_t seed, int64_t first, int64_t count,
                      uint32_t threshold, Compute scale) {
  for (int64_t b = 0; b < count / kBlock; ++b) {
    uint32_t c[4][kLanes];
    Draw(uint64_t(first / kBlock + b), uint32_t(seed), uint32_t(seed >> 32), c);
    const Storage* __restrict xb = x + b * kBlock;
    Storage* __restrict yb = y + b * kBlock;
    for (int w = 0; w < 4; ++w) {
      // A factor from the mask, not `kept ? scale : 0`, which GCC compiles
      // to a branch per element: a coin toss the predictor loses half the time.
      for (int l = 0; l < kLanes; ++l) {
        yb[w * kLanes + l] =
            Format::Narrow(Format::Widen(xb[w * kLanes + l]) * Factor(KeptMask(c[w][l], threshold), scale));
      }
    }
  }
}

// A level: its three entry points, each with the level's target attribute
// (none for the generic one) and the loops inlined into it.
#define SPARSETIR_DROPOUT_LEVEL(name, attributes)                                                                \
  attributes void Keep##name(uint64_t seed, int64_t first, int64_t count, uint32_t threshold, uint8_t* keep) {  \
    KeepLoop(seed, first, count, threshold, keep);                                                              \
  }                                                                                                              \
  attributes void ScaleFloat##name(const float* x, float* y, uint64_t seed, int64_t first, int64_t count,        \
                                   uint32_t threshold, float scale) {                                            \
    ScaleLoop<Plain<float>>(x, y, seed, first, count, threshold, scale);                                        \
  }                                                                                                              \
  attributes void ScaleDouble##name(const double* x, double* y, uint64_t seed, int64_t first, int64_t count,    \
                                    uint32_t threshold, double scale) {                                          \
    ScaleLoop<Plain<double>>(x, y, seed, first, count, threshold, scale);                                       \
  }                                                                                                              \
  attributes void ScaleBf16##name(const uint16_t* x, uint16_t* y, uint64_t seed, int64_t first, int64_t count,  \
                                  uint32_t threshold, float scale) {                                             \
    ScaleLoop<Bf16>(x, y, seed, first, count, threshold, scale);                                                \
  }                                                                                                              \
  attributes void ScaleHalf##name(const uint16_t* x, uint16_t* y, uint64_t seed, int64_t first, int64_t count,  \
                                  uint32_t threshold, float scale) {                                             \
    ScaleLoop<Half>(x, y, seed, first, count, threshold, scale);                                                \
  }                                                                                                              \
  constexpr Kernels k##name = {&Keep##name, &ScaleFloat##name, &ScaleDouble##name, &ScaleBf16##name,           \
                               &ScaleHalf##name};

// The lane loops have a fixed trip count of 16, a whole number of vectors
// at every level, and x and y are restrict (GCC at -O2 adds no run-time
// alias check): what GCC vectorizes at -O2.
SPARSETIR_DROPOUT_LEVEL(Generic, __attribute__((flatten)))
#if defined(__x86_64__)
SPARSETIR_DROPOUT_LEVEL(Avx2, __attribute__((target("avx2,fma,bmi,bmi2,popcnt"), flatten)))
SPARSETIR_DROPOUT_LEVEL(Avx512,
                        __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi,bmi2,popcnt"), flatten)))
#endif
#undef SPARSETIR_DROPOUT_LEVEL

}  // namespace

const Kernels& KernelsFor(const std::string& level) {
#if defined(__x86_64__)
  if (level == "avx512") return kAvx512;
  if (level == "avx2") return kAvx2;
#endif
  (void)level;
  return kGeneric;
}

void Philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4][1] = {{counter[0]}, {counter[1]}, {counter[2]}, {counter[3]}};
  Rounds(c, key[0], key[1]);
  for (int w = 0; w < 4; ++w) out[w] = c[w][0];
}

}  // namespace sparsetir::ops::dropout
