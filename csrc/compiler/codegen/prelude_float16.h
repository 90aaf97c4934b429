// The portable float16 / bfloat16 conversions (round to nearest even), the
// one copy that both preludes paste: each defines SPARSETIR_DEVICE (its
// function qualifiers) and sparsetir_bits_to_float / sparsetir_float_to_bits
// first, and SPARSETIR_HW_HALF / SPARSETIR_HW_BF16 where it has conversions of
// its own (the GPU's cvt instructions).
#pragma once

namespace sparsetir {

inline constexpr const char* kFloat16Conversions = R"PRELUDE(
// float16 / bfloat16 are stored as 16-bit patterns and computed in float32.
#ifndef SPARSETIR_HW_HALF
SPARSETIR_DEVICE float sparsetir_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400u)) { mantissa <<= 1; --exponent; }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return sparsetir_bits_to_float(bits);
}
SPARSETIR_DEVICE uint16_t sparsetir_float_to_half(float f) {
  uint32_t x = sparsetir_float_to_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exponent = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mantissa = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return (uint16_t)(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  if (exponent >= 31) return (uint16_t)(sign | 0x7c00u);
  if (exponent <= 0) {
    if (exponent < -10) return (uint16_t)sign;
    mantissa |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exponent), half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1u);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)exponent << 10) | (mantissa >> 13), rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: correct
  return (uint16_t)half;
}
#endif
SPARSETIR_DEVICE float sparsetir_bf16_to_float(uint16_t h) { return sparsetir_bits_to_float((uint32_t)h << 16); }
#ifndef SPARSETIR_HW_BF16
SPARSETIR_DEVICE uint16_t sparsetir_float_to_bf16(float f) {
  uint32_t x = sparsetir_float_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return (uint16_t)(x >> 16);
}
#endif
SPARSETIR_DEVICE float sparsetir_round_half(float f) { return sparsetir_half_to_float(sparsetir_float_to_half(f)); }
SPARSETIR_DEVICE float sparsetir_round_bf16(float f) { return sparsetir_bf16_to_float(sparsetir_float_to_bf16(f)); }
)PRELUDE";

}  // namespace sparsetir
