// ConvShapeKey: the geometry of one 2-D convolution (ConvArgs,
// engine/device/device_kernels.h), the part of every cuDNN convolution key
// that is not a type, layout or epilogue: CudaConv's ConvKey (cuda_conv.h)
// and CudnnGraphConv's GraphConvKey (cudnn_graph_conv.h) each hold one, and
// their tuning keys (engine/device/tuning_cache.h) write it as ToString
// does. A plain value. Also what both keys say of a tensor's element type.
#ifndef COALESCE_ENGINE_CUDA_CONV_SHAPE_KEY_H_
#define COALESCE_ENGINE_CUDA_CONV_SHAPE_KEY_H_

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "engine/device/device_kernels.h"

namespace coalesce {

struct ConvShapeKey {
  int64_t n, c, in_h, in_w, m, kernel_h, kernel_w, out_h, out_w, stride_h,
      stride_w, pad_top, pad_left, dilation_h, dilation_w, groups;

  // The geometry of `args`.
  static ConvShapeKey Of(const ConvArgs& args);

  auto Tie() const {
    return std::tie(n, c, in_h, in_w, m, kernel_h, kernel_w, out_h, out_w,
                    stride_h, stride_w, pad_top, pad_left, dilation_h,
                    dilation_w, groups);
  }
  bool operator<(const ConvShapeKey& o) const { return Tie() < o.Tie(); }
  bool operator==(const ConvShapeKey& o) const { return Tie() == o.Tie(); }

  // Every field, as tuning keys write it: "n<n> c<c> in<h>x<w> m<m>
  // k<h>x<w> out<h>x<w> s<h>x<w> p<top>x<left> d<h>x<w> g<groups>".
  std::string ToString() const;
};

// cuDNN's data type for a convolution tensor stored as `type`.
cudnnDataType_t CudnnDataType(DeviceFloat type);

// `type` as tuning keys write it: "f32", "f16" (as before bfloat16 was
// added, so recorded choices stay valid) or "bf16".
const char* TuningTypeName(DeviceFloat type);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CONV_SHAPE_KEY_H_
