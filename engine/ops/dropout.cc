// Dropout at inference: an identity on a float tensor. The ratio (attribute
// before opset 12, input 1 since) is ignored. Training mode (input 2, opset
// >= 12) must be absent or false. The optional mask output is all ones
// (nothing dropped): BOOL from opset 10, the input's type (float) before.
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/copy.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

absl::Status TrainingModeError() {
  return absl::InvalidArgumentError(
      "training_mode is true; only inference (identity) is supported");
}

class DropoutOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<DropoutOp>();
    op->mask_type_ = node.opset() >= 10 ? DataType::kBool : DataType::kFp32;
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    if (in.size() > 2 && in[2].present()) {
      if (absl::Status s = ExpectInputType(in, 2, DataType::kBool); !s.ok())
        return s;
      if (in[2].constant_data != nullptr && in[2].constant_data[0] != 0)
        return TrainingModeError();
    }
    out[0].dtype = DataType::kFp32;
    out[0].shape = in[0].shape;
    if (out.size() > 1) out[1] = {mask_type_, in[0].shape, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    // A training_mode that is not a constant is checked on every run.
    if (in.size() > 2 && in[2].present() && in[2].data[0] != 0)
      return TrainingModeError();
    const Shape& shape = *in[0].shape;
    kernels::CopyBytes(in[0].data,
                       DimProduct(shape, 0, shape.size()) * sizeof(float),
                       out[0].data);
    if (out.size() > 1 && out[1].data != nullptr) FillMask(out[1], shape);
    return absl::OkStatus();
  }

 private:
  void FillMask(const TensorView& mask, const Shape& shape) const {
    const int64_t n = DimProduct(shape, 0, shape.size());
    if (mask_type_ == DataType::kBool) {
      std::fill(mask.data, mask.data + n, 1);
    } else {
      std::fill(mask.as<float>(), mask.as<float>() + n, 1.0f);
    }
  }

  DataType mask_type_ = DataType::kBool;
};

}  // namespace

void RegisterDropoutOp(OpRegistry& registry) {
  registry.Register("Dropout", FactoryOf<DropoutOp>());
}

}  // namespace coalesce
