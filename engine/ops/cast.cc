// Cast between float32, int64, int32 and bool (attribute `to`, an ONNX
// TensorProto.DataType). `saturate` (opset 19) only concerns float8 and is
// ignored.
#include "kernels/cpu/cast.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/onnx_import.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/copy.h"

namespace coalesce {
namespace {

absl::StatusOr<kernels::CastType> KernelType(DataType type) {
  switch (type) {
    case DataType::kFp32:
      return kernels::CastType::kFloat32;
    case DataType::kInt64:
      return kernels::CastType::kInt64;
    case DataType::kInt32:
      return kernels::CastType::kInt32;
    case DataType::kBool:
      return kernels::CastType::kBool;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "Cast does not support ", std::string(DataTypeName(type))));
  }
}

class CastOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    if (!node.HasAttribute("to"))
      return absl::InvalidArgumentError("attribute 'to' is required");
    absl::StatusOr<int64_t> to = node.GetInt("to", 0);
    if (!to.ok()) return to.status();
    absl::StatusOr<DataType> type = DataTypeFromOnnx(static_cast<int32_t>(*to));
    if (!type.ok()) return type.status();
    if (absl::Status s = KernelType(*type).status(); !s.ok()) return s;
    return std::make_unique<CastOp>(*type);
  }
  explicit CastOp(DataType to) : to_(to) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    if (absl::Status s = KernelType(in[0].dtype).status(); !s.ok()) return s;
    out[0].dtype = to_;
    out[0].shape = in[0].shape;
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const int64_t n = DimProduct(*in[0].shape, 0, in[0].shape->size());
    kernels::Cast(*KernelType(in[0].dtype), in[0].data, *KernelType(to_), n,
                  out[0].data);
    return absl::OkStatus();
  }

 private:
  DataType to_;
};

}  // namespace

void RegisterCastOp(OpRegistry& registry) {
  registry.Register("Cast", FactoryOf<CastOp>());
}

}  // namespace coalesce
