// Gather along `axis` (any axis, negative counts from the end) with int64 or
// int32 indices; negative indices count from the end of the axis. Any element
// type.
#include "kernels/cpu/gather.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/tensor_schema.h"
#include "engine/string_ref.h"

namespace coalesce {
namespace {

class GatherOp : public SchemaKernel {
 public:
  GatherOp(const OpNode& node, const GatherAttrs& attrs)
      : SchemaKernel(node), axis_(attrs.axis) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& data = *in[0].shape;
    const int64_t axis = *NormalizeAxis(axis_, data.size());
    const int64_t outer = DimProduct(data, 0, axis);
    const size_t inner_bytes =
        DimProduct(data, axis + 1, data.size()) * StorageByteSize(in[0].dtype);
    const int64_t count = DimProduct(*in[1].shape, 0, in[1].shape->size());
    return in[1].dtype == DataType::kInt64
               ? kernels::Gather(in[0].data, outer, data[axis], inner_bytes,
                                 in[1].as<int64_t>(), count, out[0].data)
               : kernels::Gather(in[0].data, outer, data[axis], inner_bytes,
                                 in[1].as<int32_t>(), count, out[0].data);
  }

 private:
  int64_t axis_;
};

}  // namespace

void RegisterGatherOp(OpRegistry& registry) {
  registry.Register("Gather", SchemaFactoryOf<GatherOp, GatherAttrs>());
}

}  // namespace coalesce
