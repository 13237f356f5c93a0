// Pooling over the spatial axes of float tensors laid out [planes, spatial...]
// (NCHW with planes = N * C): max pooling (optionally with the argmax of each
// window), average pooling, and their global forms. 1 to 3 spatial axes.
// Stateless, thread-safe and allocation-free; parallel over output rows with
// OpenMP, so the caller's intra-op thread limit (threading.h) applies.
#ifndef COALESCE_KERNELS_CPU_POOL_H_
#define COALESCE_KERNELS_CPU_POOL_H_

#include <array>
#include <cstdint>

namespace coalesce::kernels {

constexpr int kMaxPoolAxes = 3;

// The windows of one pooling: along spatial axis a, output o covers the input
// positions o * strides[a] - pads_begin[a] + k * dilations[a] for k in
// [0, kernel[a]). Positions outside [0, in[a]) are padding. `out` is the
// caller's choice (floor or ceil mode); windows that end past
// in[a] + pads_end[a] are simply clipped. Fixed-size, so that describing a
// pooling allocates nothing.
struct PoolGeometry {
  using Dims = std::array<int64_t, kMaxPoolAxes>;
  int64_t planes = 0;
  int axes = 0;       // spatial axes in use, 1 to kMaxPoolAxes
  Dims in{};          // spatial input dims
  Dims out{};         // spatial output dims
  Dims kernel{};      // window size, >= 1
  Dims strides{};     // >= 1
  Dims dilations{};   // >= 1
  Dims pads_begin{};  // >= 0
  Dims pads_end{};    // >= 0
};

// y[p, o...] = max of x[p, i...] over the window's input positions. When
// `indices` is not null it receives, for each output, the flat index of that
// maximum in x: p * prod(in) + the spatial offset, row-major or, when
// `column_major`, with the first spatial axis varying fastest (ONNX
// storage_order 1). Ties keep the first position in row-major window order.
// A window holding only padding gives -inf and index -1.
// Allocates nothing. REQUIRES: 1 <= axes <= kMaxPoolAxes.
void MaxPool(const PoolGeometry& g, const float* x, float* y,
             int64_t* indices = nullptr, bool column_major = false);

// y[p, o...] = sum of x over the window's input positions / divisor, where
// the divisor counts the window positions inside the input or, when
// `count_include_pad`, those inside [-pads_begin, in + pads_end). A zero
// divisor gives 0. REQUIRES: as for MaxPool.
void AveragePool(const PoolGeometry& g, const float* x, bool count_include_pad,
                 float* y);

// Channels-last forms: x is [batch, spatial..., channels] and y
// [batch, out spatial..., channels], with g.planes = batch; the windows and
// divisors are those above, for every channel alike. No argmax. Allocates
// nothing. REQUIRES: as for MaxPool; channels >= 1.
void MaxPoolChannelsLast(const PoolGeometry& g, int64_t channels,
                         const float* x, float* y);
void AveragePoolChannelsLast(const PoolGeometry& g, int64_t channels,
                             const float* x, bool count_include_pad, float* y);

// y[p] = mean (GlobalAveragePool) or max (GlobalMaxPool) of the `plane_size`
// values x[p, ...], for p in [0, planes). An empty plane gives NaN (mean) or
// -inf (max).
void GlobalAveragePool(const float* x, int64_t planes, int64_t plane_size,
                       float* y);
void GlobalMaxPool(const float* x, int64_t planes, int64_t plane_size,
                   float* y);

// Channels-last forms: x is [batch, plane_size, channels], y [batch,
// channels]; y[b, c] is the mean or max over the plane of channel c.
void GlobalAveragePoolChannelsLast(const float* x, int64_t batch,
                                   int64_t plane_size, int64_t channels,
                                   float* y);
void GlobalMaxPoolChannelsLast(const float* x, int64_t batch,
                               int64_t plane_size, int64_t channels, float* y);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_POOL_H_
