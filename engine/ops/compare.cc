// Equal, Less, Greater, LessOrEqual, GreaterOrEqual (bool output,
// broadcasting; every numeric type, FP16 and BF16 compared as floats; BOOL
// and STRING for Equal, strings equal when their bytes are), And, Or, Xor
// (BOOL, broadcasting), Not, Where (broadcasting over all three inputs; any
// element type for X and Y, STRING included: it selects handles), and IsNaN,
// IsInf(detect_positive, detect_negative) on FP32, FP64, FP16 and BF16.
#include "kernels/cpu/compare.h"

#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/elementwise_schema.h"
#include "engine/string_ref.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/half.h"

namespace coalesce {
namespace {

absl::StatusOr<Shape> Broadcast(const Shape& a, const Shape& b) {
  std::optional<std::vector<int64_t>> out = kernels::BroadcastShapes(a, b);
  if (!out) {
    return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeToString(a),
                                                   " and ", ShapeToString(b),
                                                   " do not broadcast"));
  }
  return *std::move(out);
}

bool SameString(const void* a, const void* b) {
  return static_cast<const StringRef*>(a)->view() ==
         static_cast<const StringRef*>(b)->view();
}

class CompareOp : public OpKernel {
 public:
  explicit CompareOp(kernels::CompareOp op) : op_(op) {}

  template <kernels::CompareOp kOp>
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<CompareOp>(kOp);
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() != 2 || !in[0].present())
      return absl::InvalidArgumentError("needs two inputs");
    if (absl::Status s = ExpectInputType(in, 1, in[0].dtype); !s.ok()) return s;
    const DataType t = in[0].dtype;
    const bool equal = op_ == kernels::CompareOp::kEqual;
    const bool supported =
        (CastTypeOf(t).has_value() && t != DataType::kBool) ||
        (equal && (t == DataType::kBool || t == DataType::kBytes));
    if (!supported) {
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported type ", std::string(DataTypeName(t))));
    }
    absl::StatusOr<Shape> shape = Broadcast(in[0].shape, in[1].shape);
    if (!shape.ok()) return shape.status();
    out[0].dtype = DataType::kBool;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    if (in[0].dtype == DataType::kBytes) {
      kernels::BroadcastEqualBy(in[0].data, *in[0].shape, in[1].data,
                                *in[1].shape, *out[0].shape, sizeof(StringRef),
                                &SameString, out[0].as<bool>());
      return absl::OkStatus();
    }
    return VisitNumericType(in[0].dtype, [&](auto tag) {
      return Compare<decltype(tag)>(in, out[0]);
    });
  }

 private:
  template <typename T>
  absl::Status Compare(absl::Span<const ConstTensorView> in,
                       const TensorView& out) const {
    kernels::BroadcastCompare<T>(op_, in[0].as<T>(), *in[0].shape,
                                 in[1].as<T>(), *in[1].shape, *out.shape,
                                 out.as<bool>());
    return absl::OkStatus();
  }

  kernels::CompareOp op_;
};

// And, Or, Xor: BOOL inputs, broadcast.
class LogicalOp : public OpKernel {
 public:
  explicit LogicalOp(kernels::CompareOp op) : op_(op) {}

  template <kernels::CompareOp kOp>
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<LogicalOp>(kOp);
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    for (int i : {0, 1}) {
      if (absl::Status s = ExpectInputType(in, i, DataType::kBool); !s.ok())
        return s;
    }
    absl::StatusOr<Shape> shape = Broadcast(in[0].shape, in[1].shape);
    if (!shape.ok()) return shape.status();
    out[0] = {DataType::kBool, *std::move(shape), nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    kernels::BroadcastCompare<bool>(op_, in[0].as<bool>(), *in[0].shape,
                                    in[1].as<bool>(), *in[1].shape,
                                    *out[0].shape, out[0].as<bool>());
    return absl::OkStatus();
  }

 private:
  kernels::CompareOp op_;
};

// IsNaN and IsInf (engine/schema/elementwise_schema.h): a float tensor
// classified element by element.
class FloatClassOp : public SchemaKernel {
 public:
  FloatClassOp(const OpNode& node, const FloatClassAttrs& attrs)
      : SchemaKernel(node),
        is_nan_(attrs.is_nan),
        positive_(attrs.positive),
        negative_(attrs.negative) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const int64_t n = DimProduct(*in[0].shape, 0, in[0].shape->size());
    return VisitNumericType(in[0].dtype, [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T> ||
                    std::is_same_v<T, kernels::Float16> ||
                    std::is_same_v<T, kernels::BFloat16>) {
        if (is_nan_) {
          kernels::IsNaN<T>(in[0].as<T>(), n, out[0].as<bool>());
        } else {
          kernels::IsInf<T>(in[0].as<T>(), n, positive_, negative_,
                            out[0].as<bool>());
        }
        return absl::OkStatus();
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

 private:
  bool is_nan_, positive_, negative_;
};

class NotOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<NotOp>();
  }
  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kBool); !s.ok())
      return s;
    out[0] = {DataType::kBool, in[0].shape, nullptr};
    return absl::OkStatus();
  }
  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    kernels::LogicalNot(in[0].as<bool>(),
                        DimProduct(*in[0].shape, 0, in[0].shape->size()),
                        out[0].as<bool>());
    return absl::OkStatus();
  }
};

class WhereOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<WhereOp>();
  }
  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() != 3)
      return absl::InvalidArgumentError("Where needs three inputs");
    if (absl::Status s = ExpectInputType(in, 0, DataType::kBool); !s.ok())
      return s;
    if (!in[1].present())
      return absl::InvalidArgumentError("input 1 is required");
    if (absl::Status s = ExpectInputType(in, 2, in[1].dtype); !s.ok()) return s;
    absl::StatusOr<Shape> xy = Broadcast(in[1].shape, in[2].shape);
    if (!xy.ok()) return xy.status();
    absl::StatusOr<Shape> shape = Broadcast(in[0].shape, *xy);
    if (!shape.ok()) return shape.status();
    out[0].dtype = in[1].dtype;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }
  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    kernels::BroadcastWhere(
        in[0].as<bool>(), *in[0].shape, in[1].data, *in[1].shape, in[2].data,
        *in[2].shape, *out[0].shape, StorageByteSize(in[1].dtype), out[0].data);
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterCompareOps(OpRegistry& registry) {
  registry.Register("Equal", &CompareOp::Create<kernels::CompareOp::kEqual>);
  registry.Register("Less", &CompareOp::Create<kernels::CompareOp::kLess>);
  registry.Register("Greater",
                    &CompareOp::Create<kernels::CompareOp::kGreater>);
  registry.Register("LessOrEqual",
                    &CompareOp::Create<kernels::CompareOp::kLessOrEqual>);
  registry.Register("GreaterOrEqual",
                    &CompareOp::Create<kernels::CompareOp::kGreaterOrEqual>);
  registry.Register("And", &LogicalOp::Create<kernels::CompareOp::kAnd>);
  registry.Register("Or", &LogicalOp::Create<kernels::CompareOp::kOr>);
  registry.Register("Xor", &LogicalOp::Create<kernels::CompareOp::kXor>);
  registry.Register("IsNaN", SchemaFactoryOf<FloatClassOp, FloatClassAttrs>());
  registry.Register("IsInf", SchemaFactoryOf<FloatClassOp, FloatClassAttrs>());
  registry.Register("Not", FactoryOf<NotOp>());
  registry.Register("Where", FactoryOf<WhereOp>());
}

}  // namespace coalesce
