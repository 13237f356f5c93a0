// SdpaLayout: how a fused attention (AttentionArgs,
// engine/device/device_kernels.h) is described to cuDNN's scaled-dot-product
// attention (cudnn_sdpa.h), or why it cannot be. Host code only, no CUDA:
// tested without a GPU (sdpa_layout_test.cc).
//
// cuDNN's SDPA takes q, k, v and out as 4-D [batch, heads, rows, head_dim]
// views of 16-bit tensors with element strides (the head split and merge
// stay strides, as in our kernel), and an additive bias (our mask) of the
// same 16-bit type whose broadcast axes have dimension 1. So:
//   - q, k, v and out must share one 16-bit type (float16 or bfloat16);
//   - head_dim a multiple of 8 and at most kMaxSdpaHeadDim, and every
//     stride but the contiguous head_dim's a positive multiple of 8
//     elements (16-byte rows, as cuDNN's kernels load them);
//   - no zero_masked_rows (PyTorch's guard makes a fully masked row 0;
//     cuDNN's softmax is not asked to);
//   - no packed rows (AttentionArgs::pack: cuDNN's ragged offsets could
//     take them; not described yet);
//   - a mask with its key axis contiguous and its other strides multiples
//     of 8 elements (cuDNN takes every tensor as 16-byte aligned and does
//     not check the bias: so with a mask, kv_len a multiple of 8 when the
//     mask is converted). A mask of q's type is read as it is (axes of
//     stride 0 become dimension 1). A float32 mask (the exports' Where
//     gives one) is converted to q's type first, into a compact array of
//     `bias_elements` (the non-broadcast axes, row-major), which needs
//     those axes to lie compact and row-major already: then the conversion
//     is one contiguous run of bias_elements floats from the mask's start.
//     The conversion saturates (kernels/cuda/half.h): float32's lowest,
//     Hugging Face's "minus infinity", becomes the lowest finite 16-bit
//     value, so a fully masked row keeps a defined softmax, as with our
//     kernel, instead of cuDNN's NaN of all -inf.
// An axis of extent 1 gets the tensor's outermost extent as its stride
// (any stride addresses it; cuDNN's Hopper kernels want 16-byte strides).
// Anything else is Unimplemented with the reason: the caller runs our own
// kernel.
#ifndef COALESCE_ENGINE_CUDA_SDPA_LAYOUT_H_
#define COALESCE_ENGINE_CUDA_SDPA_LAYOUT_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device/device_kernels.h"

namespace coalesce {

inline constexpr int64_t kMaxSdpaHeadDim = 128;

// Dimensions and element strides of one 4-D tensor, [batch, heads, rows,
// cols] as AttentionArgs orders them.
struct SdpaTensor {
  std::array<int64_t, 4> dims = {};
  std::array<int64_t, 4> strides = {};
};

struct SdpaLayout {
  DeviceFloat type = DeviceFloat::kHalf;  // q's, k's, v's and out's
  SdpaTensor q, k, v, out;
  bool has_bias = false;
  SdpaTensor bias;  // as cuDNN reads it: the mask, or its converted copy
  // The mask is float32: it is converted to `type` into a compact array of
  // bias_elements (bias's strides then are that array's).
  bool convert_bias = false;
  int64_t bias_elements = 0;
};

// The layout of `a`, or Unimplemented saying why cuDNN's SDPA does not take
// it (the header's rules).
absl::StatusOr<SdpaLayout> SdpaLayoutOf(const AttentionArgs& a);

// Everything that decides the cuDNN graph of `a` (its layout and scale), as
// a string: equal keys, one graph.
std::string SdpaKey(const SdpaLayout& layout, float scale);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_SDPA_LAYOUT_H_
