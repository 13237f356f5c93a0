// Float16 (IEEE 754 binary16) and BFloat16 (the upper half of a binary32):
// 16-bit element types held as their bit patterns, and their conversions to
// and from float. Pure functions; thread-safe.
//
// From float both round to nearest, ties to even; values beyond the largest
// finite one become infinity, infinities stay infinities and NaN stays NaN
// (quiet, sign kept). The conversions use integer arithmetic only, so they do
// not depend on the floating-point environment (flush-to-zero included).
#ifndef COALESCE_KERNELS_CPU_HALF_H_
#define COALESCE_KERNELS_CPU_HALF_H_

#include <bit>
#include <cstdint>

namespace coalesce::kernels {

struct Float16 {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};
static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

inline uint16_t FloatToHalfBits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                       // a normal half (>= 2^-14)
    const uint32_t odd = (abs >> 13) & 1u;
    return sign |
           static_cast<uint16_t>((abs - 0x38000000u + 0xfffu + odd) >> 13);
  }
  if (abs <= 0x33000000u) return sign;  // <= 2^-25 rounds to zero
  // A subnormal half: value / 2^-24, rounded to nearest even.
  const uint32_t exponent = abs >> 23;
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t result = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (result & 1u))) ++result;
  return sign | static_cast<uint16_t>(result);
}

inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // zero
  } else {        // subnormal: normalize
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t FloatToBf16Bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN stays quiet NaN
  const uint32_t odd = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + odd) >> 16);
}

inline float Bf16BitsToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline float ToFloat(Float16 h) { return HalfBitsToFloat(h.bits); }
inline float ToFloat(BFloat16 b) { return Bf16BitsToFloat(b.bits); }
inline Float16 ToFloat16(float f) { return Float16{FloatToHalfBits(f)}; }
inline BFloat16 ToBFloat16(float f) { return BFloat16{FloatToBf16Bits(f)}; }

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_HALF_H_
