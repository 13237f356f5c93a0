// Float16 (IEEE 754 binary16) and bfloat16 to and from float, for the GPU
// path's FP16 and BF16 modes: the conversions of the CUDA kernels in half.cu
// and of the host code that prepares their operands (constants converted once,
// on the host), so both give the same bits. Pure functions; host and device;
// unit-tested on the host (cuda_math_test.cc).
//
// From float: round to nearest, ties to even. Results below 2^-14 are
// subnormal halves; what rounds below the smallest of those (2^-24) is a
// zero of the input's sign; what rounds to 65520 or more in magnitude is an
// infinity of the input's sign. Infinities stay infinities; NaN becomes a
// quiet NaN of the same sign. To float: exact (every half is a float), NaN
// payloads and signs kept.
//
// Halves are held as their uint16_t bits (CUDA's __half layout) and converted
// with integer arithmetic, not through a half type: _Float16 and __half are
// not available to every host compiler this header must build with, and
// integer steps do not depend on the floating-point environment (flush to
// zero included). The CPU kernels use these functions too
// (kernels/cpu/half.h).
#ifndef COALESCE_KERNELS_CUDA_HALF_MATH_H_
#define COALESCE_KERNELS_CUDA_HALF_MATH_H_

#include <stdint.h>
#include <string.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

// The bits of a float and back (memcpy: defined behavior in host and device
// code, compiled to a register move).
COALESCE_HD uint32_t BitsOfFloat(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  return bits;
}

COALESCE_HD float FloatOfBits(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

COALESCE_HD uint16_t FloatToHalfBits(float x) {
  const uint32_t bits = BitsOfFloat(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN: quiet, sign kept
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (or inf): inf
  if (abs >= 0x38800000u) {                       // >= 2^-14: a normal half
    // Rebias the exponent (127 - 15 = 112) and drop 13 mantissa bits,
    // adding just under half of the dropped unit, plus one when the kept
    // part is odd: ties go to even. A carry moves into the exponent, as it
    // should; 65504 + less than half a unit still stays below 0x7c00.
    const uint32_t odd = (abs >> 13) & 1u;
    return sign |
           static_cast<uint16_t>((abs - (112u << 23) + 0xfffu + odd) >> 13);
  }
  if (abs <= 0x33000000u) return sign;  // <= 2^-25: rounds to zero
  // A subnormal half: the value in units of 2^-24, rounded to nearest even.
  // (A result of 0x400 is the smallest normal half, correctly encoded.)
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - (abs >> 23);  // 14 .. 24
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  const bool up = rest > halfway || (rest == halfway && (kept & 1u) != 0);
  return sign | static_cast<uint16_t>(kept + (up ? 1u : 0u));
}

COALESCE_HD float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) {  // inf or NaN (payload kept)
    return FloatOfBits(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent != 0) {  // normal: rebias the exponent by 127 - 15
    return FloatOfBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return FloatOfBits(sign);  // a signed zero
  // Subnormal, mantissa * 2^-24: a normal float. Shift the leading one into
  // the implicit bit's place (at most 10 steps).
  uint32_t float_exponent = 113;  // 2^-14 when the leading one is bit 10
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return FloatOfBits(sign | (float_exponent << 23) |
                     ((mantissa & 0x3ffu) << 13));
}

// Bfloat16 (float32's sign, exponent and top 7 mantissa bits) from float:
// round to nearest, ties to even, on the dropped 16 bits. Finite values
// that round past the largest bfloat16 become infinities, as in float32;
// NaN becomes a quiet NaN of the same sign (payload's top bits kept).
// Subnormals round as any other value (bfloat16 has float32's range).
COALESCE_HD uint16_t FloatToBFloat16Bits(float x) {
  const uint32_t bits = BitsOfFloat(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t odd = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + odd) >> 16);
}

// Exact: a bfloat16 is the top half of a float.
COALESCE_HD float BFloat16BitsToFloat(uint16_t b) {
  return FloatOfBits(static_cast<uint32_t>(b) << 16);
}

// The largest finite float16 and bfloat16 (0x7bff, 0x7f7f).
inline constexpr float kMaxFiniteHalf = 65504.0f;
inline constexpr float kMaxFiniteBFloat16 = 3.38953139e38f;

// x clamped to [-max, max], NaN kept: converted after this, a value beyond
// the 16-bit range becomes the largest finite value of its sign instead of
// an infinity (an additive mask's "minus infinity" written as float32's
// lowest, as Hugging Face's, stays finite, so a fully masked row keeps a
// defined softmax).
COALESCE_HD float ClampToFinite(float x, float max) {
  if (x > max) return max;
  if (x < -max) return -max;
  return x;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_HALF_MATH_H_
