// The per-element math of the CUDA QuantizeLinear/DequantizeLinear kernel
// (quantize.cu), as the CPU engine computes it (kernels/cpu/quantize.h):
// quantize is saturate(round_half_to_even(x / scale) + zero_point), NaN
// giving 0; dequantize is (x - zero_point) * scale with the difference in
// integers. A tensor is viewed as [outer, channels, inner] with one scale
// and zero point per channel. Host and device; unit-tested on the host
// (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_QUANTIZE_MATH_H_
#define COALESCE_KERNELS_CUDA_QUANTIZE_MATH_H_

#include <math.h>
#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

enum class QuantType { kInt8, kUint8, kInt16, kUint16, kInt32 };

template <typename Q>
struct QuantRange;
template <>
struct QuantRange<int8_t> {
  static constexpr float kLow = -128.0f, kHigh = 127.0f;
};
template <>
struct QuantRange<uint8_t> {
  static constexpr float kLow = 0.0f, kHigh = 255.0f;
};
template <>
struct QuantRange<int16_t> {
  static constexpr float kLow = -32768.0f, kHigh = 32767.0f;
};
template <>
struct QuantRange<uint16_t> {
  static constexpr float kLow = 0.0f, kHigh = 65535.0f;
};
// int32 is dequantized only; its range is here so the templates compile
// (the largest float below 2^31 as the top).
template <>
struct QuantRange<int32_t> {
  static constexpr float kLow = -2147483648.0f, kHigh = 2147483520.0f;
};

template <typename Q>
COALESCE_HD Q QuantizeValue(float x, float scale, float zero_point) {
  float q = rintf(x / scale) + zero_point;  // rintf: half to even
  if (q != q) q = 0.0f;
  q = q < QuantRange<Q>::kLow ? QuantRange<Q>::kLow : q;
  q = q > QuantRange<Q>::kHigh ? QuantRange<Q>::kHigh : q;
  return static_cast<Q>(q);
}

template <typename Q>
COALESCE_HD float DequantizeValue(Q x, float scale, int64_t zero_point) {
  return static_cast<float>(static_cast<int64_t>(x) - zero_point) * scale;
}

// The channel of element i of [outer, channels, inner].
COALESCE_HD int64_t QuantChannel(int64_t i, int64_t channels, int64_t inner) {
  return (i / inner) % channels;
}

// Element i of QuantizeLinear (x float, y Q) or DequantizeLinear (x Q, y
// float); zero_point (Q) may be null (0).
template <typename Q>
COALESCE_HD void QuantizeElement(bool quantize, const void* x,
                                 const float* scale, const Q* zero_point,
                                 void* y, int64_t channels, int64_t inner,
                                 int64_t i) {
  const int64_t c = QuantChannel(i, channels, inner);
  const Q zp = zero_point != nullptr ? zero_point[c] : Q{0};
  if (quantize) {
    static_cast<Q*>(y)[i] = QuantizeValue<Q>(static_cast<const float*>(x)[i],
                                             scale[c], static_cast<float>(zp));
  } else {
    static_cast<float*>(y)[i] =
        DequantizeValue<Q>(static_cast<const Q*>(x)[i], scale[c], zp);
  }
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_QUANTIZE_MATH_H_
