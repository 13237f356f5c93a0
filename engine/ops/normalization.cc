// LayerNormalization (opset 17): normalizes X over dimensions [axis, rank)
// (axis default -1), then applies Scale and the optional bias B. Scale and B
// must have the normalized shape (leading 1s allowed) or one element. Only
// output 0 (Y) is supported; a node that asks for Mean or InvStdDev is
// rejected when the model loads.
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/layer_norm.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

// True when `param` is one element or, without leading 1s, equals `norm`.
bool FitsNormalizedShape(const Shape& param, const Shape& norm) {
  if (DimProduct(param, 0, param.size()) == 1) return true;
  size_t lead = 0;
  while (lead < param.size() && param.size() - lead > norm.size() &&
         param[lead] == 1) {
    ++lead;
  }
  return Shape(param.begin() + lead, param.end()) == norm;
}

class LayerNormOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    for (int i = 1; i < node.num_outputs(); ++i) {
      if (!node.proto().output(i).empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "output ", i, " (", i == 1 ? "Mean" : "InvStdDev",
            ") is not supported; only Y (output 0) is implemented"));
      }
    }
    absl::StatusOr<int64_t> axis = node.GetInt("axis", -1);
    if (!axis.ok()) return axis.status();
    absl::StatusOr<float> epsilon = node.GetFloat("epsilon", 1e-5f);
    if (!epsilon.ok()) return epsilon.status();
    return std::make_unique<LayerNormOp>(*axis, *epsilon);
  }

  LayerNormOp(int64_t axis, float epsilon) : axis_(axis), epsilon_(epsilon) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    for (int i : {0, 1}) {
      if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
        return s;
    }
    const bool has_bias = in.size() > 2 && in[2].present();
    if (has_bias) {
      if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
        return s;
    }
    const Shape& x = in[0].shape;
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, x.size());
    if (!axis.ok()) return axis.status();
    const Shape norm(x.begin() + *axis, x.end());
    for (int i = 1; i <= (has_bias ? 2 : 1); ++i) {
      if (!FitsNormalizedShape(in[i].shape, norm)) {
        return absl::InvalidArgumentError(absl::StrCat(
            i == 1 ? "Scale" : "B", " has shape ", ShapeToString(in[i].shape),
            "; expected the normalized shape ", ShapeToString(norm),
            " or a single element"));
      }
    }
    out[0].dtype = DataType::kFp32;
    out[0].shape = x;
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& x = *in[0].shape;
    const int64_t axis = *NormalizeAxis(axis_, x.size());
    kernels::LayerNormParams p;
    p.epsilon = epsilon_;
    p.scale = in[1].as<float>();
    p.scale_is_scalar = DimProduct(*in[1].shape, 0, in[1].shape->size()) == 1;
    if (in.size() > 2 && in[2].present()) {
      p.bias = in[2].as<float>();
      p.bias_is_scalar = DimProduct(*in[2].shape, 0, in[2].shape->size()) == 1;
    }
    kernels::LayerNorm(in[0].as<float>(), DimProduct(x, 0, axis),
                       DimProduct(x, axis, x.size()), p, out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  float epsilon_;
};

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  registry.Register("LayerNormalization", FactoryOf<LayerNormOp>());
}

}  // namespace coalesce
