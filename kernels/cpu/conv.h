// Convolution (ONNX Conv semantics, NC + 1 to 3 spatial dims) on oneDNN.
// Activations are row-major "NCHW"-style tensors, or channels-last ("NHWC")
// ones when ConvGeometry::channels_last is set; weights and bias always have
// ONNX's layout.
//
// ConvPrimitive is created once per set of shapes (an execution plan) and
// then run many times: oneDNN picks the fastest algorithm for this machine
// and the layouts it wants; the weights are reordered into that layout once
// and shared, through ConvWeightsCache, by every primitive of the same node.
// Activations enter and leave in the caller's layout; when the algorithm wants
// another one (a blocked layout, or NCHW where the caller's is channels-last),
// Run reorders through the caller's scratch memory, and skips the reorder when
// the layouts agree.
#ifndef COALESCE_KERNELS_CPU_CONV_H_
#define COALESCE_KERNELS_CPU_CONV_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cpu/fused_activation.h"

namespace coalesce::kernels {

struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t groups = 1;
  // One entry per spatial dim (1 to 3 of them).
  std::vector<int64_t> in_spatial;
  std::vector<int64_t> out_spatial;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;  // 1 = dense
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  // The layout of the caller's src and dst (the dims above are logical and
  // the same either way). false: [N, C, spatial...]. true: channels-last,
  // [N, W, C], [N, H, W, C] or [N, D, H, W, C].
  bool channels_last = false;
};

// Weights reordered into the layouts the primitives of one Conv node asked
// for, keyed by layout. Holds a pointer to the node's constant weights, which
// must outlive it. Thread-safe.
class ConvWeightsCache {
 public:
  ConvWeightsCache();
  ~ConvWeightsCache();
  ConvWeightsCache(const ConvWeightsCache&) = delete;
  ConvWeightsCache& operator=(const ConvWeightsCache&) = delete;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class ConvPrimitive {
 public:
  // `weights` is [out_channels, in_channels / groups, kernel...]; with
  // `has_bias`, Run takes a bias of [out_channels]. When `weights_cache` is
  // given, `weights` must be constant for the cache's lifetime and Run ignores
  // its weights argument; otherwise Run reorders the weights it is given each
  // time. With `accumulate`, Run adds the convolution to what dst holds (a
  // residual), before the activation. InvalidArgument for a geometry oneDNN
  // cannot run.
  static absl::StatusOr<std::unique_ptr<ConvPrimitive>> Create(
      const ConvGeometry& geometry, bool has_bias,
      const FusedActivation& activation, const float* weights,
      ConvWeightsCache* weights_cache, bool accumulate = false);
  ~ConvPrimitive();

  size_t scratch_bytes() const;

  // dst = act(conv(src, weights) + bias), or act(conv(src, weights) + bias +
  // dst) when created with `accumulate`. `scratch` is 64-byte aligned with
  // scratch_bytes(). Not thread-safe: one Run at a time per primitive.
  absl::Status Run(const float* src, const float* weights, const float* bias,
                   float* dst, char* scratch);

  struct Impl;

 private:
  explicit ConvPrimitive(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_CONV_H_
