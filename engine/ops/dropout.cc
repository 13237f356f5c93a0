// Dropout at inference: an identity on a float tensor. The ratio (attribute
// before opset 12, input 1 since) is ignored. Training mode (input 2, opset
// >= 12) must be absent or false, and the optional mask output is not
// supported: a node that asks for it is rejected when the model loads.
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
    if (node.num_outputs() > 1 && !node.proto().output(1).empty()) {
      return absl::InvalidArgumentError(
          "the mask output (output 1) is not supported");
    }
    return std::make_unique<DropoutOp>();
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
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterDropoutOp(OpRegistry& registry) {
  registry.Register("Dropout", FactoryOf<DropoutOp>());
}

}  // namespace coalesce
