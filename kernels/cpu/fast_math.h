// Float exp and erf made of plain arithmetic, so that loops over them
// vectorize (std::exp and std::erf are scalar library calls, 10 to 25 ns per
// element here). Header-only so that they inline into each kernel's loop.
// Accuracy against the functions in double is stated per function and
// checked in fast_math_test.cc.
#ifndef COALESCE_KERNELS_CPU_FAST_MATH_H_
#define COALESCE_KERNELS_CPU_FAST_MATH_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace coalesce::kernels {

// e^x with relative error below 3e-7 on [-87, 88]. Below -87 it returns 0
// (the true value is below FLT_MIN, a denormal the server flushes anyway);
// above 88 it returns +inf (the true overflow is at 88.72). NaN stays NaN.
// Method: e^x = 2^n * e^r with n = round(x / ln 2), r = x - n ln 2 in two
// parts (Cody-Waite), e^r by a degree-5 polynomial (Cephes' expf
// coefficients), 2^n written into the exponent bits.
inline float FastExp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Adding and taking away 1.5 * 2^23 rounds to the nearest integer (for
  // magnitudes below 2^22); std::floor would keep the loop from vectorizing.
  constexpr float kRound = 12582912.0f;
  const float xc = std::min(std::max(x, -87.0f), 88.0f);  // NaN stays NaN
  // A NaN takes exponent 0 (converting NaN to an integer is undefined);
  // r below keeps the NaN, so the result is NaN.
  const float xn = xc == xc ? xc : 0.0f;
  const float n = (xn * kLog2e + kRound) - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  // n is in [-126, 127], a normal exponent.
  const float scale =
      std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  float y = er * scale;
  y = x < -87.0f ? 0.0f : y;
  y = x > 88.0f ? HUGE_VALF : y;
  return y;
}

// erf(x) as an odd polynomial over an even one in x after clamping x to
// [-4, 4] (beyond, erf is +-1 in float). Absolute error below 4.2e-7.
// NaN stays NaN. The coefficients are the minimax fit Eigen and XLA use for
// float.
inline float FastErf(float x) {
  x = std::min(std::max(x, -4.0f), 4.0f);  // max(NaN, .) keeps the NaN
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_FAST_MATH_H_
