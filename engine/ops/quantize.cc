// QuantizeLinear and DequantizeLinear (opsets 10 to 21): FP32 scales, per
// tensor or per channel along `axis`, with an optional zero point that gives
// the quantized type (INT8, UINT8, INT16, UINT16; DequantizeLinear also
// INT32, which quantized biases use). Without a zero point QuantizeLinear
// writes UINT8, or `output_dtype` (opset 21). Blocked quantization
// (block_size) and the float8 types are refused at load.
//
// QDQ models from onnxruntime's quantization tool run through these in
// float: each DequantizeLinear gives the float its quantized value stands
// for, and the float operators between them compute on those values.
#include "kernels/cpu/quantize.h"

#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

bool IsQuantizedType(DataType t, bool allow_int32) {
  return t == DataType::kInt8 || t == DataType::kUint8 ||
         t == DataType::kInt16 || t == DataType::kUint16 ||
         (allow_int32 && t == DataType::kInt32);
}

// [outer, channels, inner] of a tensor quantized per tensor (channels = 1)
// or along an axis.
struct Channels {
  int64_t outer = 1, channels = 1, inner = 1;
};

class LinearQuantOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node,
                                                          bool quantize) {
    absl::StatusOr<int64_t> axis = node.GetInt("axis", 1);
    if (!axis.ok()) return axis.status();
    absl::StatusOr<int64_t> block = node.GetInt("block_size", 0);
    if (!block.ok()) return block.status();
    if (*block != 0) {
      return absl::UnimplementedError(
          "blocked quantization (block_size) is not supported");
    }
    absl::StatusOr<int64_t> output_dtype = node.GetInt("output_dtype", 0);
    if (!output_dtype.ok()) return output_dtype.status();
    DataType output = DataType::kUint8;
    if (*output_dtype != 0) {
      if (*output_dtype == onnx::TensorProto::INT8)
        output = DataType::kInt8;
      else if (*output_dtype == onnx::TensorProto::INT16)
        output = DataType::kInt16;
      else if (*output_dtype == onnx::TensorProto::UINT16)
        output = DataType::kUint16;
      else if (*output_dtype != onnx::TensorProto::UINT8) {
        return absl::UnimplementedError(
            absl::StrCat("output_dtype ", *output_dtype,
                         " (INT8, UINT8, INT16 and UINT16 are supported)"));
      }
    }
    return std::make_unique<LinearQuantOp>(quantize, *axis, output);
  }

  LinearQuantOp(bool quantize, int64_t axis, DataType default_output)
      : quantize_(quantize), axis_(axis), default_output_(default_output) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() < 2 || !in[0].present() || !in[1].present())
      return absl::InvalidArgumentError("needs an input and a scale");
    const bool has_zero = in.size() > 2 && in[2].present();
    if (quantize_) {
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
        quantize_ ? (has_zero ? in[2].dtype : default_output_) : in[0].dtype;
    if (!IsQuantizedType(quantized, /*allow_int32=*/!quantize_)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unsupported quantized type ", std::string(DataTypeName(quantized))));
    }
    if (has_zero) {
      if (absl::Status s = ExpectInputType(in, 2, quantized); !s.ok()) return s;
    }
    absl::StatusOr<Channels> channels = Layout(in[0].shape, in[1].shape);
    if (!channels.ok()) return channels.status();
    if (has_zero && in[2].shape != in[1].shape &&
        DimProduct(in[2].shape, 0, in[2].shape.size()) != channels->channels) {
      return absl::InvalidArgumentError(
          absl::StrCat("zero point ", ShapeToString(in[2].shape),
                       " does not match scale ", ShapeToString(in[1].shape)));
    }
    out[0] = {quantize_ ? quantized : DataType::kFp32, in[0].shape, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Channels c = *Layout(*in[0].shape, *in[1].shape);
    const bool has_zero = in.size() > 2 && in[2].present();
    const DataType quantized = quantize_ ? out[0].dtype : in[0].dtype;
    return VisitNumericType(quantized, [&](auto tag) -> absl::Status {
      using Q = decltype(tag);
      if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t> ||
                    std::is_same_v<Q, int16_t> || std::is_same_v<Q, uint16_t>) {
        const Q* zero = has_zero ? in[2].as<Q>() : nullptr;
        if (quantize_) {
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
  // Per tensor when the scale holds one value; else per channel along axis.
  absl::StatusOr<Channels> Layout(const Shape& x, const Shape& scale) const {
    Channels c;
    c.inner = DimProduct(x, 0, x.size());
    if (scale.empty() || (scale.size() == 1 && scale[0] == 1)) return c;
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, x.size());
    if (!axis.ok()) return axis.status();
    if (scale.size() != 1 || scale[0] != x[*axis]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scale ", ShapeToString(scale), " must be a scalar or have ",
          x[*axis], " values (axis ", *axis, " of ", ShapeToString(x), ")"));
    }
    c.outer = DimProduct(x, 0, *axis);
    c.channels = x[*axis];
    c.inner = DimProduct(x, *axis + 1, x.size());
    return c;
  }

  bool quantize_;
  int64_t axis_;
  DataType default_output_;
};

}  // namespace

void RegisterQuantizeOps(OpRegistry& registry) {
  registry.Register("QuantizeLinear", [](const OpNode& node) {
    return LinearQuantOp::Create(node, /*quantize=*/true);
  });
  registry.Register("DequantizeLinear", [](const OpNode& node) {
    return LinearQuantOp::Create(node, /*quantize=*/false);
  });
}

}  // namespace coalesce
