// Sum, Max, Min, Mean over one or more float inputs with multidirectional
// broadcasting (opset >= 8; earlier opsets require equal shapes, which
// broadcasting accepts too). Max and Min also take FP64 and integer inputs
// (exporters take the max of int64 shape values and mask positions).
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/broadcast_math.h"
#include "kernels/cpu/elementwise.h"

namespace coalesce {
namespace {

enum class Variadic { kSum, kMax, kMin, kMean };

class VariadicOp : public OpKernel {
 public:
  explicit VariadicOp(Variadic kind) : kind_(kind) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty()) return absl::InvalidArgumentError("needs at least 1 input");
    const DataType type = in[0].dtype;
    if (type != DataType::kFp32) {
      const bool extremum = kind_ == Variadic::kMax || kind_ == Variadic::kMin;
      if (!extremum || !IsArithmeticType(type)) {
        return absl::InvalidArgumentError(
            absl::StrCat("input 0 has type ", std::string(DataTypeName(type)),
                         extremum ? "; expected a number" : "; expected FP32"));
      }
    }
    Shape shape;
    for (size_t i = 0; i < in.size(); ++i) {
      if (absl::Status s = ExpectInputType(in, i, type); !s.ok()) return s;
      auto next = kernels::BroadcastShapes(shape, in[i].shape);
      if (!next) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", i, " of shape ", ShapeToString(in[i].shape),
                         " does not broadcast with ", ShapeToString(shape)));
      }
      shape = *std::move(next);
    }
    out[0].dtype = type;
    out[0].shape = std::move(shape);
    return absl::OkStatus();
  }

  // The first input is broadcast into the output, then each other input is
  // folded in place. Sum and Mean whose first two inputs already give the
  // output's shape (a residual connection's Add) start with one pass over
  // them instead, in the vectorized arithmetic kernel.
  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    if (in[0].dtype != DataType::kFp32) return RunExtremum(in, out[0]);
    const Shape& out_shape = *out[0].shape;
    float* y = out[0].as<float>();
    if (kind_ != Variadic::kMax && kind_ != Variadic::kMin && in.size() >= 2 &&
        kernels::BroadcastShapes(*in[0].shape, *in[1].shape) == out_shape) {
      kernels::BroadcastBinary<float>(kernels::BinaryOp::kAdd,
                                      in[0].as<float>(), *in[0].shape,
                                      in[1].as<float>(), *in[1].shape, y);
      for (size_t i = 2; i < in.size(); ++i) {
        kernels::BroadcastBinary<float>(kernels::BinaryOp::kAdd, y, out_shape,
                                        in[i].as<float>(), *in[i].shape, y);
      }
      if (kind_ == Variadic::kMean) {
        kernels::Scale(y, DimProduct(out_shape, 0, out_shape.size()),
                       1.0f / static_cast<float>(in.size()));
      }
      return absl::OkStatus();
    }
    kernels::BroadcastTo(in[0].as<float>(), *in[0].shape, out_shape, y);
    const kernels::MathBinaryOp op =
        kind_ == Variadic::kMax   ? kernels::MathBinaryOp::kMax
        : kind_ == Variadic::kMin ? kernels::MathBinaryOp::kMin
                                  : kernels::MathBinaryOp::kAdd;
    for (size_t i = 1; i < in.size(); ++i) {
      kernels::BroadcastMath(op, y, out_shape, in[i].as<float>(), *in[i].shape,
                             y);
    }
    if (kind_ == Variadic::kMean && in.size() > 1) {
      kernels::Scale(y, DimProduct(out_shape, 0, out_shape.size()),
                     1.0f / static_cast<float>(in.size()));
    }
    return absl::OkStatus();
  }

 private:
  // Max or Min of FP64 or integer inputs, folded pairwise: each partial
  // result has the broadcast shape of the inputs so far (the last one is
  // the output).
  absl::Status RunExtremum(absl::Span<const ConstTensorView> in,
                           const TensorView& out) const {
    const kernels::BinaryOp op = kind_ == Variadic::kMax
                                     ? kernels::BinaryOp::kMax
                                     : kernels::BinaryOp::kMin;
    return VisitNumericType(in[0].dtype, [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        if (in.size() == 1) {  // the maximum of x and itself: a copy
          kernels::BroadcastBinary<T>(op, in[0].as<T>(), *in[0].shape,
                                      in[0].as<T>(), *in[0].shape, out.as<T>());
          return absl::OkStatus();
        }
        std::vector<T> partial, next;
        const T* acc = in[0].as<T>();
        Shape acc_shape = *in[0].shape;
        for (size_t i = 1; i < in.size(); ++i) {
          Shape shape = *kernels::BroadcastShapes(acc_shape, *in[i].shape);
          T* y = out.as<T>();
          if (i + 1 < in.size()) {
            next.resize(DimProduct(shape, 0, shape.size()));
            y = next.data();
          }
          kernels::BroadcastBinary<T>(op, acc, acc_shape, in[i].as<T>(),
                                      *in[i].shape, y);
          partial.swap(next);
          acc = partial.data();
          acc_shape = std::move(shape);
        }
        return absl::OkStatus();
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

  Variadic kind_;
};

OpFactory VariadicFactory(Variadic kind) {
  return
      [kind](const OpNode& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
        return std::make_unique<VariadicOp>(kind);
      };
}

}  // namespace

void RegisterVariadicOps(OpRegistry& registry) {
  registry.Register("Sum", VariadicFactory(Variadic::kSum));
  registry.Register("Max", VariadicFactory(Variadic::kMax));
  registry.Register("Min", VariadicFactory(Variadic::kMin));
  registry.Register("Mean", VariadicFactory(Variadic::kMean));
}

}  // namespace coalesce
