// Relu, Sigmoid, Tanh: float elementwise activations, output shape = input.
#include "kernels/cpu/activation.h"

#include <memory>

#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"

namespace coalesce {
namespace {

using ActivationFn = void (*)(const float*, int64_t, float*);

class ActivationOp : public OpKernel {
 public:
  explicit ActivationOp(ActivationFn fn) : fn_(fn) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    out[0].dtype = DataType::kFp32;
    out[0].shape = in[0].shape;
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& shape = *in[0].shape;
    fn_(in[0].as<float>(), DimProduct(shape, 0, shape.size()),
        out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  ActivationFn fn_;
};

OpFactory ActivationFactory(ActivationFn fn) {
  return [fn](const OpNode& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    return std::make_unique<ActivationOp>(fn);
  };
}

}  // namespace

void RegisterActivationOps(OpRegistry& registry) {
  registry.Register("Relu", ActivationFactory(&kernels::Relu));
  registry.Register("Sigmoid", ActivationFactory(&kernels::Sigmoid));
  registry.Register("Tanh", ActivationFactory(&kernels::Tanh));
}

}  // namespace coalesce
