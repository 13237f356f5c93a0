// Softmax and LogSoftmax. Opset < 13: the input is coerced to 2-D at `axis`
// (default 1) and each row is normalized. Opset >= 13: normalized along `axis`
// (default -1).
#include "kernels/cpu/softmax.h"

#include <memory>

#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"

namespace coalesce {
namespace {

using SoftmaxFn = void (*)(const float*, int64_t, int64_t, int64_t, float*);

class SoftmaxOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node,
                                                          SoftmaxFn fn) {
    const bool legacy = node.opset() < 13;
    absl::StatusOr<int64_t> axis = node.GetInt("axis", legacy ? 1 : -1);
    if (!axis.ok()) return axis.status();
    return std::make_unique<SoftmaxOp>(*axis, legacy, fn);
  }

  SoftmaxOp(int64_t axis, bool legacy, SoftmaxFn fn)
      : axis_(axis), legacy_(legacy), fn_(fn) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, in[0].shape.size());
    if (!axis.ok()) return axis.status();
    out[0].dtype = DataType::kFp32;
    out[0].shape = in[0].shape;
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    const int64_t axis = *NormalizeAxis(axis_, s.size());
    const int64_t outer = DimProduct(s, 0, axis);
    if (legacy_) {
      fn_(in[0].as<float>(), outer, DimProduct(s, axis, s.size()), 1,
          out[0].as<float>());
    } else {
      fn_(in[0].as<float>(), outer, s[axis], DimProduct(s, axis + 1, s.size()),
          out[0].as<float>());
    }
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool legacy_;
  SoftmaxFn fn_;
};

OpFactory SoftmaxFactory(SoftmaxFn fn) {
  return [fn](const OpNode& node) { return SoftmaxOp::Create(node, fn); };
}

}  // namespace

void RegisterSoftmaxOp(OpRegistry& registry) {
  registry.Register("Softmax", SoftmaxFactory(&kernels::Softmax));
  registry.Register("LogSoftmax", SoftmaxFactory(&kernels::LogSoftmax));
}

}  // namespace coalesce
