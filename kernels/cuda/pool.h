// CUDA kernels over NCHW feature maps: 2-D max and average pooling (any
// pads, dilation, count_include_pad), LRN across channels, and a
// per-channel affine map with an activation, y = act(x * scale[c] +
// shift[c]) (Conv's bias and activation, BatchNormalization at inference).
// The math is in pool_math.h and elementwise_math.h. Each launcher enqueues
// one kernel and returns the launch's error.
#ifndef COALESCE_KERNELS_CUDA_POOL_H_
#define COALESCE_KERNELS_CUDA_POOL_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/pool_math.h"

namespace coalesce::kernels::cuda {

// x [planes, in_h, in_w] -> y [planes, out_h, out_w].
cudaError_t LaunchPool2D(const Pool2DGeometry& g, const float* x, float* y,
                         int64_t planes, cudaStream_t stream);

// x, y [batch, channels, spatial].
cudaError_t LaunchLrn(const float* x, float* y, int64_t batch, int64_t channels,
                      int64_t spatial, int64_t size, float alpha, float beta,
                      float bias, cudaStream_t stream);

// scale and shift may be null (1 and 0); y may equal x.
cudaError_t LaunchChannelAffine(const float* x, const float* scale,
                                const float* shift, float* y, int64_t batch,
                                int64_t channels, int64_t spatial,
                                Activation act, float alpha, float beta,
                                cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_POOL_H_
