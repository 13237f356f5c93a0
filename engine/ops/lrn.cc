// LRN: local response normalization across channels of a float
// [N, C, spatial...] tensor (opsets 1 and 13 differ only in types).
// Attributes: size (required, >= 1), alpha (1e-4), beta (0.75), bias (1).
#include "kernels/cpu/lrn.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/window_limits.h"

namespace coalesce {
namespace {

class LrnOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    if (!node.HasAttribute("size"))
      return absl::InvalidArgumentError("LRN needs the size attribute");
    kernels::LrnParams p;
    absl::StatusOr<int64_t> size = node.GetInt("size", 1);
    absl::StatusOr<float> alpha = node.GetFloat("alpha", p.alpha);
    absl::StatusOr<float> beta = node.GetFloat("beta", p.beta);
    absl::StatusOr<float> bias = node.GetFloat("bias", p.bias);
    if (!size.ok()) return size.status();
    for (const auto* s : {&alpha, &beta, &bias})
      if (!s->ok()) return s->status();
    if (*size < 1 || *size > kMaxWindowAttribute) {
      return absl::InvalidArgumentError(absl::StrCat(
          "size must be in [1, ", kMaxWindowAttribute, "], got ", *size));
    }
    p.size = *size;
    p.alpha = *alpha;
    p.beta = *beta;
    p.bias = *bias;
    return std::make_unique<LrnOp>(p);
  }

  explicit LrnOp(const kernels::LrnParams& params) : params_(params) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    if (in[0].shape.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat("input of shape ",
                                                     ShapeToString(in[0].shape),
                                                     " has no N and C dims"));
    }
    out[0] = {DataType::kFp32, in[0].shape, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    kernels::Lrn(in[0].as<float>(), s[0], s[1], DimProduct(s, 2, s.size()),
                 params_, out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  kernels::LrnParams params_;
};

}  // namespace

void RegisterLrnOp(OpRegistry& registry) {
  registry.Register("LRN", FactoryOf<LrnOp>());
}

}  // namespace coalesce
