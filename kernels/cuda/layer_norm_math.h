// The math of the CUDA LayerNormalization kernel (layer_norm.cu): a row's
// mean and sum of squared deviations, accumulated per thread and combined
// in any order (Chan et al.'s parallel update, numerically stable where
// E[x^2] - E[x]^2 is not), a fused residual's rounded sum, and one
// normalized element. Statistics stay in
// float32 whatever the tensor type. Host and device; unit-tested on the
// host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_LAYER_NORM_MATH_H_
#define COALESCE_KERNELS_CUDA_LAYER_NORM_MATH_H_

#include <math.h>

#include "kernels/cuda/float_storage.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

// Part of a row: how many elements, their mean, and the sum of squared
// deviations from it. The empty part is {0, 0, 0}.
struct MeanM2 {
  float count;
  float mean;
  float m2;
};

COALESCE_HD MeanM2 EmptyMeanM2() { return {0.0f, 0.0f, 0.0f}; }

COALESCE_HD MeanM2 AddValue(MeanM2 p, float x) {
  const float count = p.count + 1.0f;
  const float delta = x - p.mean;
  const float mean = p.mean + delta / count;
  return {count, mean, p.m2 + delta * (x - mean)};
}

COALESCE_HD MeanM2 Combine(MeanM2 a, MeanM2 b) {
  if (b.count == 0.0f) return a;
  if (a.count == 0.0f) return b;
  const float count = a.count + b.count;
  const float delta = b.mean - a.mean;
  const float wb = b.count / count;
  return {count, a.mean + delta * wb,
          a.m2 + b.m2 + delta * delta * a.count * wb};
}

// 1 / sqrt(variance + epsilon) of a whole row (population variance, as
// ONNX LayerNormalization defines it).
COALESCE_HD float InvStdDev(MeanM2 row, float epsilon) {
  return 1.0f / sqrtf(row.m2 / row.count + epsilon);
}

// A fused residual's sum as its Add would store it: float32, or rounded
// (to nearest even) to the Add's 16-bit result type and back.
COALESCE_HD float RoundSum(float value, FloatStorage storage) {
  if (storage == FloatStorage::kHalf)
    return HalfBitsToFloat(FloatToHalfBits(value));
  if (storage == FloatStorage::kBFloat16)
    return BFloat16BitsToFloat(FloatToBFloat16Bits(value));
  return value;
}

// One output element: (x - mean) * inv_std * scale + bias.
COALESCE_HD float LayerNormValue(float x, float mean, float inv_std,
                                 float scale, float bias) {
  return (x - mean) * inv_std * scale + bias;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_LAYER_NORM_MATH_H_
