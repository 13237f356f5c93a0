// Gather along `axis` (any axis, negative counts from the end) with int64 or
// int32 indices; negative indices count from the end of the axis. Any element
// type.
#include "kernels/cpu/gather.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/string_ref.h"

namespace coalesce {
namespace {

class GatherOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<int64_t> axis = node.GetInt("axis", 0);
    if (!axis.ok()) return axis.status();
    return std::make_unique<GatherOp>(*axis);
  }
  explicit GatherOp(int64_t axis) : axis_(axis) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() < 2 || !in[0].present() || !in[1].present())
      return absl::InvalidArgumentError("Gather needs data and indices");
    if (in[1].dtype != DataType::kInt64 && in[1].dtype != DataType::kInt32)
      return absl::InvalidArgumentError("indices must be int64 or int32");
    const Shape& data = in[0].shape;
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, data.size());
    if (!axis.ok()) return axis.status();
    Shape shape(data.begin(), data.begin() + *axis);
    shape.insert(shape.end(), in[1].shape.begin(), in[1].shape.end());
    shape.insert(shape.end(), data.begin() + *axis + 1, data.end());
    out[0].dtype = in[0].dtype;
    out[0].shape = std::move(shape);
    return absl::OkStatus();
  }

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
  registry.Register("Gather", FactoryOf<GatherOp>());
}

}  // namespace coalesce
