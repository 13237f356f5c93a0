// ArgMax (engine/schema/reduce_schema.h) on the CPU.
#include "kernels/cpu/argmax.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/reduce_schema.h"

namespace coalesce {
namespace {

class ArgMaxOp : public SchemaKernel {
 public:
  ArgMaxOp(const OpNode& node, const ArgMaxAttrs& attrs)
      : SchemaKernel(node),
        axis_(attrs.axis),
        select_last_(attrs.select_last) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    const int64_t axis = *NormalizeAxis(axis_, s.size());
    const int64_t outer = DimProduct(s, 0, axis),
                  inner = DimProduct(s, axis + 1, s.size());
    int64_t* dst = out[0].as<int64_t>();
    switch (in[0].dtype) {
      case DataType::kFp32:
        kernels::ArgMax(in[0].as<float>(), outer, s[axis], inner, select_last_,
                        dst);
        break;
      case DataType::kInt64:
        kernels::ArgMax(in[0].as<int64_t>(), outer, s[axis], inner,
                        select_last_, dst);
        break;
      default:
        kernels::ArgMax(in[0].as<int32_t>(), outer, s[axis], inner,
                        select_last_, dst);
    }
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool select_last_;
};

}  // namespace

void RegisterArgMaxOp(OpRegistry& registry) {
  registry.Register("ArgMax", SchemaFactoryOf<ArgMaxOp, ArgMaxAttrs>());
}

}  // namespace coalesce
