// Cast (attribute `to`, an ONNX TensorProto.DataType) between every numeric
// type (kernels/cpu/cast.h gives the rules) and between numbers and STRING
// (engine/ops/string_conversion.h gives the text forms; a string that does
// not parse fails the run). `saturate` (opset 19) only concerns float8 and is
// ignored.
#include "kernels/cpu/cast.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/onnx_import.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/string_conversion.h"
#include "engine/string_ref.h"
#include "engine/string_store.h"
#include "kernels/cpu/copy.h"

namespace coalesce {
namespace {

absl::Status CheckCastable(DataType type) {
  if (type == DataType::kBytes || CastTypeOf(type).has_value())
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("Cast does not support ", std::string(DataTypeName(type))));
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
    if (absl::Status s = CheckCastable(*type); !s.ok()) return s;
    return std::make_unique<CastOp>(*type);
  }
  explicit CastOp(DataType to) : to_(to) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    if (absl::Status s = CheckCastable(in[0].dtype); !s.ok()) return s;
    out[0].dtype = to_;
    out[0].shape = in[0].shape;
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const int64_t n = DimProduct(*in[0].shape, 0, in[0].shape->size());
    const DataType from = in[0].dtype;
    if (from == DataType::kBytes && to_ == DataType::kBytes) {
      kernels::CopyBytes(in[0].data, n * sizeof(StringRef), out[0].data);
      return absl::OkStatus();
    }
    if (from == DataType::kBytes) {
      return StringsToNumbers(in[0].as<StringRef>(), n, to_, out[0].data);
    }
    if (to_ == DataType::kBytes) {
      if (out[0].strings == nullptr)
        return absl::InternalError("Cast to STRING was given no string store");
      return NumbersToStrings(from, in[0].data, n, *out[0].strings,
                              out[0].as<StringRef>());
    }
    kernels::Cast(*CastTypeOf(from), in[0].data, *CastTypeOf(to_), n,
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
