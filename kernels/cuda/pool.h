// CUDA kernels over feature maps: 2-D max and average pooling (any pads,
// dilation, count_include_pad) over NCHW or NHWC; LRN across channels
// (NCHW, float32); and the per-channel map y = act(x * scale[c] +
// shift[c] + z) over NCHW or NHWC (Conv's epilogue: bias, residual and
// activation; BatchNormalization at inference). Pooling and the
// per-channel map compute in float32 and read and write float32 or 16-bit,
// each operand independently (float_storage.h). The math is in pool_math.h
// and elementwise_math.h. Each launcher enqueues one kernel (none for an
// empty output) and returns the launch's error.
#ifndef COALESCE_KERNELS_CUDA_POOL_H_
#define COALESCE_KERNELS_CUDA_POOL_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/float_storage.h"
#include "kernels/cuda/pool_math.h"

namespace coalesce::kernels::cuda {

// x [planes, in_h, in_w] -> y [planes, out_h, out_w], or with
// channels_last x [planes / channels, in_h, in_w, channels] -> y
// [planes / channels, out_h, out_w, channels].
// Global pooling (out 1x1, kernel the whole non-empty input, no pads,
// dilation 1) runs many threads per plane and combines their partials
// (PoolValue's value; the sum's float32 rounding and, among several NaNs,
// the one returned may differ); every other geometry one thread per output.
// REQUIRES: layout.channels > 0 dividing layout.planes; y not x.
cudaError_t LaunchPool2D(const Pool2DGeometry& g, const PoolLayout& layout,
                         FloatSource x, FloatTarget y, cudaStream_t stream);

// x, y [batch, channels, spatial], float32.
cudaError_t LaunchLrn(const float* x, float* y, int64_t batch, int64_t channels,
                      int64_t spatial, int64_t size, float alpha, float beta,
                      float bias, cudaStream_t stream);

// y = act(x * scale[c] + shift[c] + z) over m.layout's elements
// (ChannelAffineValue); z.data null for no residual. y may equal x (same
// storage), never z.
// REQUIRES: m.layout.channels > 0 when there are elements.
cudaError_t LaunchChannelAffine(const ChannelAffineMap& m, FloatSource x,
                                FloatSource z, FloatTarget y,
                                cudaStream_t stream);

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_POOL_H_
