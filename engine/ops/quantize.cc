// QuantizeLinear and DequantizeLinear (engine/schema/quantize_schema.h) on
// the CPU. QDQ models from onnxruntime's quantization tool run through these
// in float: each DequantizeLinear gives the float its quantized value stands
// for, and the float operators between them compute on those values.
#include "kernels/cpu/quantize.h"

#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/quantize_schema.h"

namespace coalesce {
namespace {

class LinearQuantOp : public SchemaKernel {
 public:
  LinearQuantOp(const OpNode& node, const QuantizeAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const QuantChannels c = *QuantizeLayout(attrs_, *in[0].shape, *in[1].shape);
    const bool has_zero = in.size() > 2 && in[2].present();
    const DataType quantized = attrs_.quantize ? out[0].dtype : in[0].dtype;
    return VisitNumericType(quantized, [&](auto tag) -> absl::Status {
      using Q = decltype(tag);
      if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t> ||
                    std::is_same_v<Q, int16_t> || std::is_same_v<Q, uint16_t>) {
        const Q* zero = has_zero ? in[2].as<Q>() : nullptr;
        if (attrs_.quantize) {
          kernels::QuantizeLinear<Q>(in[0].as<float>(), c.outer, c.channels,
                                     c.inner, in[1].as<float>(), zero,
                                     out[0].as<Q>());
        } else {
          kernels::DequantizeLinear<Q>(in[0].as<Q>(), c.outer, c.channels,
                                       c.inner, in[1].as<float>(), zero,
                                       out[0].as<float>());
        }
        return absl::OkStatus();
      } else if constexpr (std::is_same_v<Q, int32_t>) {
        const Q* zero = has_zero ? in[2].as<Q>() : nullptr;
        kernels::DequantizeLinear<Q>(in[0].as<Q>(), c.outer, c.channels,
                                     c.inner, in[1].as<float>(), zero,
                                     out[0].as<float>());
        return absl::OkStatus();
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

 private:
  const QuantizeAttrs attrs_;
};

}  // namespace

void RegisterQuantizeOps(OpRegistry& registry) {
  registry.Register("QuantizeLinear",
                    SchemaFactoryOf<LinearQuantOp, QuantizeAttrs>());
  registry.Register("DequantizeLinear",
                    SchemaFactoryOf<LinearQuantOp, QuantizeAttrs>());
}

}  // namespace coalesce
