// CUDA LayerNormalization over the last axis of a [rows, cols] tensor:
// y = (s - mean) / sqrt(var + epsilon) * scale + bias, where s is x, or,
// with a fused residual (the Add before a transformer's LayerNorm),
// x + residual rounded as the Add would store it (sum's storage), written
// to sum when sum.data is set. The residual is [residual_rows, cols],
// repeated over x's rows. scale and bias are float32 of cols elements (bias
// may be null). x, residual, y and sum are float32 or 16-bit each
// (float_storage.h): the statistics and the affine map are float32
// whatever their storage, y rounded once to nearest even. Rows of up to
// 1024 columns (a transformer's): one warp per row, s in registers, the
// mean and then the squared deviations summed by shuffles. Longer rows:
// one block per row, each thread keeping its first elements of s in
// registers, so a row of up to kLayerNormCachedCols is read once, with
// Chan's parallel update across the block. The math is in
// layer_norm_math.h. Without a residual y may be x (same storage), never
// another part of it; with one, y and sum overlap no input. Enqueues one
// kernel and returns the launch's error.
#ifndef COALESCE_KERNELS_CUDA_LAYER_NORM_H_
#define COALESCE_KERNELS_CUDA_LAYER_NORM_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/float_storage.h"

namespace coalesce::kernels::cuda {

inline constexpr int64_t kLayerNormCachedCols = 2048;

struct LayerNormLaunch {
  FloatSource x;
  const float* scale = nullptr;
  const float* bias = nullptr;
  FloatTarget y;
  int64_t rows = 0, cols = 0;
  float epsilon = 1e-5f;
  FloatSource residual;  // data null: none
  int64_t residual_rows = 0;
  FloatTarget sum;  // storage: how s is rounded; data null: not written
};

cudaError_t LaunchLayerNorm(const LayerNormLaunch& args, cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_LAYER_NORM_H_
