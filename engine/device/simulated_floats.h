// Reading and writing the float tensors of the simulated device's kernels
// (simulated_kernels.cc, simulated_cnn.cc) as DeviceKernels stores them:
// float32, or float16 or bfloat16 bits rounded as the CUDA kernels round
// (kernels/cuda/half_math.h); and element offsets of NCHW and NHWC
// tensors. Internal to engine/device/.
#ifndef COALESCE_ENGINE_DEVICE_SIMULATED_FLOATS_H_
#define COALESCE_ENGINE_DEVICE_SIMULATED_FLOATS_H_

#include <cstdint>

#include "engine/device/device_kernels.h"
#include "kernels/cuda/half_math.h"

namespace coalesce {

// 16-bit `bits` of `type` (kHalf or kBFloat16) as a float (exact).
inline float WidenBits(Half bits, DeviceFloat type) {
  return type == DeviceFloat::kBFloat16
             ? kernels::cuda::BFloat16BitsToFloat(bits)
             : kernels::cuda::HalfBitsToFloat(bits);
}

// v in 16-bit `type`, rounded to nearest even.
inline Half NarrowBits(float v, DeviceFloat type) {
  return type == DeviceFloat::kBFloat16 ? kernels::cuda::FloatToBFloat16Bits(v)
                                        : kernels::cuda::FloatToHalfBits(v);
}

// v as `type` stores it, back as a float.
inline float RoundTo(DeviceFloat type, float v) {
  return type == DeviceFloat::kFloat ? v : WidenBits(NarrowBits(v, type), type);
}

inline float Load(FloatIn x, int64_t i) {
  return x.is_16bit() ? WidenBits(static_cast<const Half*>(x.data)[i], x.type)
                      : static_cast<const float*>(x.data)[i];
}

// Stores v, rounded to nearest even in a 16-bit type.
inline void Store(FloatOut y, int64_t i, float v) {
  if (y.is_16bit()) {
    static_cast<Half*>(y.data)[i] = NarrowBits(v, y.type);
  } else {
    static_cast<float*>(y.data)[i] = v;
  }
}

// Offset of element (n, c, h, w) of a [n, c, h, w] tensor stored NCHW, or
// NHWC when channels_last.
inline int64_t Offset4(bool channels_last, int64_t channels, int64_t height,
                       int64_t width, int64_t n, int64_t c, int64_t h,
                       int64_t w) {
  return channels_last ? ((n * height + h) * width + w) * channels + c
                       : ((n * channels + c) * height + h) * width + w;
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_SIMULATED_FLOATS_H_
