#include "engine/cuda/conv_shape_key.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace coalesce {

ConvShapeKey ConvShapeKey::Of(const ConvArgs& a) {
  return {.n = a.n,
          .c = a.c,
          .in_h = a.in_h,
          .in_w = a.in_w,
          .m = a.m,
          .kernel_h = a.kernel_h,
          .kernel_w = a.kernel_w,
          .out_h = a.out_h,
          .out_w = a.out_w,
          .stride_h = a.stride_h,
          .stride_w = a.stride_w,
          .pad_top = a.pad_top,
          .pad_left = a.pad_left,
          .dilation_h = a.dilation_h,
          .dilation_w = a.dilation_w,
          .groups = a.groups};
}

std::string ConvShapeKey::ToString() const {
  return absl::StrCat("n", n, " c", c, " in", in_h, "x", in_w, " m", m, " k",
                      kernel_h, "x", kernel_w, " out", out_h, "x", out_w, " s",
                      stride_h, "x", stride_w, " p", pad_top, "x", pad_left,
                      " d", dilation_h, "x", dilation_w, " g", groups);
}

cudnnDataType_t CudnnDataType(DeviceFloat type) {
  switch (type) {
    case DeviceFloat::kHalf:
      return CUDNN_DATA_HALF;
    case DeviceFloat::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    case DeviceFloat::kFloat:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

const char* TuningTypeName(DeviceFloat type) {
  switch (type) {
    case DeviceFloat::kHalf:
      return "f16";
    case DeviceFloat::kBFloat16:
      return "bf16";
    case DeviceFloat::kFloat:
      break;
  }
  return "f32";
}

}  // namespace coalesce
