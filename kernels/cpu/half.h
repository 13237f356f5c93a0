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

#include "kernels/cuda/half_math.h"

namespace coalesce::kernels {

struct Float16 {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};
static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

// Float16: the same functions as the GPU path's (host and device code).
using cuda::FloatToHalfBits;
using cuda::HalfBitsToFloat;

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
