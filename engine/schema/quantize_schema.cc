#include "engine/schema/quantize_schema.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

// output_dtype's values (ONNX TensorProto.DataType numbers).
absl::StatusOr<DataType> OutputType(int64_t onnx_type) {
  switch (onnx_type) {
    case 0:  // absent
    case 2:
      return DataType::kUint8;
    case 3:
      return DataType::kInt8;
    case 4:
      return DataType::kUint16;
    case 5:
      return DataType::kInt16;
    default:
      return absl::UnimplementedError(
          absl::StrCat("output_dtype ", onnx_type,
                       " (INT8, UINT8, INT16 and UINT16 are supported)"));
  }
}

absl::StatusOr<QuantizeAttrs> Resolve(const SchemaNode& node, bool quantize) {
  const NodeAttributes& a = node.attributes;
  absl::StatusOr<int64_t> axis = a.GetInt("axis", 1);
  absl::StatusOr<int64_t> block = a.GetInt("block_size", 0);
  absl::StatusOr<int64_t> output_dtype = a.GetInt("output_dtype", 0);
  for (const absl::Status& s :
       {axis.status(), block.status(), output_dtype.status()})
    if (!s.ok()) return s;
  if (*block != 0) {
    return absl::UnimplementedError(
        "blocked quantization (block_size) is not supported");
  }
  absl::StatusOr<DataType> output = OutputType(*output_dtype);
  if (!output.ok()) return output.status();
  return QuantizeAttrs{quantize, *axis, *output};
}

absl::Status Infer(const QuantizeAttrs& attrs, absl::Span<const TensorInfo> in,
                   absl::Span<TensorInfo> out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present())
    return absl::InvalidArgumentError("needs an input and a scale");
  const bool has_zero = in.size() > 2 && in[2].present();
  if (attrs.quantize) {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
  } else if (!IsQuantizedType(in[0].dtype, /*allow_int32=*/true)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 0 has type ", std::string(DataTypeName(in[0].dtype)),
        "; INT8, UINT8, INT16, UINT16 or INT32 expected"));
  }
  if (absl::Status s = ExpectInputType(in, 1, DataType::kFp32); !s.ok())
    return s;
  const DataType quantized =
      attrs.quantize ? (has_zero ? in[2].dtype : attrs.default_output)
                     : in[0].dtype;
  if (!IsQuantizedType(quantized, /*allow_int32=*/!attrs.quantize)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported quantized type ", std::string(DataTypeName(quantized))));
  }
  if (has_zero) {
    if (absl::Status s = ExpectInputType(in, 2, quantized); !s.ok()) return s;
  }
  absl::StatusOr<QuantChannels> channels =
      QuantizeLayout(attrs, in[0].shape, in[1].shape);
  if (!channels.ok()) return channels.status();
  if (has_zero && in[2].shape != in[1].shape &&
      DimProduct(in[2].shape, 0, in[2].shape.size()) != channels->channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("zero point ", ShapeToString(in[2].shape),
                     " does not match scale ", ShapeToString(in[1].shape)));
  }
  out[0] = {attrs.quantize ? quantized : DataType::kFp32, in[0].shape, nullptr};
  return absl::OkStatus();
}

}  // namespace

bool IsQuantizedType(DataType t, bool allow_int32) {
  return t == DataType::kInt8 || t == DataType::kUint8 ||
         t == DataType::kInt16 || t == DataType::kUint16 ||
         (allow_int32 && t == DataType::kInt32);
}

absl::StatusOr<QuantChannels> QuantizeLayout(const QuantizeAttrs& attrs,
                                             const Shape& x,
                                             const Shape& scale) {
  QuantChannels c;
  c.inner = DimProduct(x, 0, x.size());
  if (scale.empty() || (scale.size() == 1 && scale[0] == 1)) return c;
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, x.size());
  if (!axis.ok()) return axis.status();
  if (scale.size() != 1 || scale[0] != x[*axis]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scale ", ShapeToString(scale), " must be a scalar or have ", x[*axis],
        " values (axis ", *axis, " of ", ShapeToString(x), ")"));
  }
  c.outer = DimProduct(x, 0, *axis);
  c.channels = x[*axis];
  c.inner = DimProduct(x, *axis + 1, x.size());
  return c;
}

void RegisterQuantizeSchemas(SchemaRegistry& registry) {
  for (bool quantize : {true, false}) {
    registry.Register(quantize ? "QuantizeLinear" : "DequantizeLinear",
                      std::make_shared<FunctionSchema<QuantizeAttrs>>(
                          [quantize](const SchemaNode& node) {
                            return Resolve(node, quantize);
                          },
                          &Infer));
  }
}

}  // namespace coalesce
