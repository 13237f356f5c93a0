// DepthToSpace and SpaceToDepth on [N, C, H, W] tensors of any element type.
// Attributes: blocksize (required, >= 1) and mode, "DCR" (default) or "CRD"
// (DepthToSpace from opset 11, SpaceToDepth from opset 28).
//   DepthToSpace: [N, C, H, W] -> [N, C / b^2, H * b, W * b]
//   SpaceToDepth: [N, C, H, W] -> [N, C * b^2, H / b, W / b]
#include "kernels/cpu/depth_space.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/window_limits.h"
#include "engine/string_ref.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

absl::StatusOr<kernels::DepthSpaceMode> ParseMode(const OpNode& node) {
  std::string mode = "DCR";
  for (const onnx::AttributeProto& attr : node.proto().attribute()) {
    if (attr.name() != "mode") continue;
    if (attr.type() != onnx::AttributeProto::STRING)
      return absl::InvalidArgumentError("attribute 'mode' must be STRING");
    mode = attr.s();
  }
  if (mode == "DCR") return kernels::DepthSpaceMode::kDcr;
  if (mode == "CRD") return kernels::DepthSpaceMode::kCrd;
  return absl::InvalidArgumentError(
      absl::StrCat("mode '", mode, "' is not DCR or CRD"));
}

class DepthSpaceOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node,
                                                          bool to_space) {
    if (!node.HasAttribute("blocksize"))
      return absl::InvalidArgumentError("the blocksize attribute is required");
    absl::StatusOr<int64_t> block = node.GetInt("blocksize", 1);
    if (!block.ok()) return block.status();
    if (*block < 1 || *block > kMaxWindowAttribute) {
      return absl::InvalidArgumentError(absl::StrCat(
          "blocksize must be in [1, ", kMaxWindowAttribute, "], got ", *block));
    }
    absl::StatusOr<kernels::DepthSpaceMode> mode = ParseMode(node);
    if (!mode.ok()) return mode.status();
    return std::make_unique<DepthSpaceOp>(*block, *mode, to_space);
  }

  DepthSpaceOp(int64_t block, kernels::DepthSpaceMode mode, bool to_space)
      : block_(block), mode_(mode), to_space_(to_space) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    const Shape& s = in[0].shape;
    if (s.size() != 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input of shape ", ShapeToString(s), " is not [N, C, H, W]"));
    }
    const int64_t b = block_, b2 = block_ * block_;
    Shape shape;
    if (to_space_) {
      if (s[1] % b2 != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "channels ", s[1], " are not a multiple of blocksize^2 ", b2));
      }
      shape = {s[0], s[1] / b2, 0, 0};
      if (__builtin_mul_overflow(s[2], b, &shape[2]) ||
          __builtin_mul_overflow(s[3], b, &shape[3]))
        return absl::InvalidArgumentError(
            absl::StrCat("H and W of ", ShapeToString(s), " times blocksize ",
                         b, " overflow int64"));
    } else {
      if (s[2] % b != 0 || s[3] % b != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("H and W of ", ShapeToString(s),
                         " are not multiples of blocksize ", b));
      }
      shape = {s[0], 0, s[2] / b, s[3] / b};
      if (__builtin_mul_overflow(s[1], b2, &shape[1]))
        return absl::InvalidArgumentError(absl::StrCat(
            "channels ", s[1], " times blocksize^2 ", b2, " overflow int64"));
    }
    out[0] = {in[0].dtype, std::move(shape), nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const size_t element = StorageByteSize(in[0].dtype);
    if (to_space_) {
      kernels::DepthToSpace(in[0].data, DepthSide(*in[0].shape), mode_, element,
                            out[0].data);
    } else {
      kernels::SpaceToDepth(in[0].data, DepthSide(*out[0].shape), mode_,
                            element, out[0].data);
    }
    return absl::OkStatus();
  }

 private:
  kernels::DepthSpaceShape DepthSide(const Shape& s) const {
    return {s[0], s[1], s[2], s[3], block_};
  }

  int64_t block_;
  kernels::DepthSpaceMode mode_;
  bool to_space_;
};

OpFactory DepthSpaceFactory(bool to_space) {
  return [to_space](const OpNode& node) {
    return DepthSpaceOp::Create(node, to_space);
  };
}

}  // namespace

void RegisterDepthSpaceOps(OpRegistry& registry) {
  registry.Register("DepthToSpace", DepthSpaceFactory(/*to_space=*/true));
  registry.Register("SpaceToDepth", DepthSpaceFactory(/*to_space=*/false));
}

}  // namespace coalesce
