// Identity, Flatten and Reshape: ops that keep the bytes and change the shape.
// They copy (the planner does not alias buffers). Any element type.
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/op_registry.h"
#include "engine/ops/copying_op.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/copy.h"

namespace coalesce {
namespace {

class IdentityOp : public CopyingOp {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<IdentityOp>();
  }
  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = RequireInput(in); !s.ok()) return s;
    out[0].dtype = in[0].dtype;
    out[0].shape = in[0].shape;
    return absl::OkStatus();
  }
};

class FlattenOp : public CopyingOp {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<int64_t> axis = node.GetInt("axis", 1);
    if (!axis.ok()) return axis.status();
    return std::make_unique<FlattenOp>(*axis);
  }
  explicit FlattenOp(int64_t axis) : axis_(axis) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = RequireInput(in); !s.ok()) return s;
    const Shape& s = in[0].shape;
    absl::StatusOr<int64_t> axis =
        NormalizeAxis(axis_, s.size(), /*inclusive=*/true);
    if (!axis.ok()) return axis.status();
    out[0].dtype = in[0].dtype;
    out[0].shape = {DimProduct(s, 0, *axis), DimProduct(s, *axis, s.size())};
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
};

// Resolves 0 (copy the input dim unless allow_zero) and one -1 (inferred).
absl::StatusOr<Shape> ResolveReshape(const Shape& in,
                                     const std::vector<int64_t>& spec,
                                     bool allow_zero) {
  Shape out(spec.size());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    out[i] = spec[i];
    if (spec[i] == 0 && !allow_zero) {
      if (i >= in.size())
        return absl::InvalidArgumentError("0 in shape past the input rank");
      out[i] = in[i];
    } else if (spec[i] == -1) {
      if (infer_at >= 0)
        return absl::InvalidArgumentError("more than one -1 in shape");
      infer_at = static_cast<int>(i);
      continue;
    } else if (spec[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid dimension ", spec[i]));
    }
    if (__builtin_mul_overflow(known, out[i], &known)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape [", absl::StrJoin(spec, ","),
                       "] has more elements than int64 counts"));
    }
  }
  const int64_t total = DimProduct(in, 0, in.size());
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return absl::InvalidArgumentError("cannot infer the -1 dimension");
    }
    out[infer_at] = total / known;
    known *= out[infer_at];
  }
  if (known != total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot reshape ", ShapeToString(in), " to ", ShapeToString(out)));
  }
  return out;
}

class ReshapeOp : public CopyingOp {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<int64_t> allow_zero = node.GetInt("allowzero", 0);
    if (!allow_zero.ok()) return allow_zero.status();
    absl::StatusOr<std::vector<int64_t>> shape = node.GetInts("shape");
    if (!shape.ok()) return shape.status();
    const bool from_attribute = node.opset() < 5;
    if (!from_attribute && node.num_inputs() < 2) {
      return absl::InvalidArgumentError("Reshape needs a shape input");
    }
    return std::make_unique<ReshapeOp>(*allow_zero != 0, from_attribute,
                                       *shape);
  }
  ReshapeOp(bool allow_zero, bool from_attribute, std::vector<int64_t> shape)
      : allow_zero_(allow_zero),
        from_attribute_(from_attribute),
        shape_(std::move(shape)) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = RequireInput(in); !s.ok()) return s;
    std::vector<int64_t> spec = shape_;
    if (!from_attribute_) {
      if (absl::Status s = ExpectInputType(in, 1, DataType::kInt64); !s.ok())
        return s;
      if (in[1].constant_data == nullptr || in[1].shape.size() != 1) {
        return absl::InvalidArgumentError(
            "the shape input must be a 1-D initializer or Constant");
      }
      const auto* data = reinterpret_cast<const int64_t*>(in[1].constant_data);
      spec.assign(data, data + in[1].shape[0]);
    }
    absl::StatusOr<Shape> shape =
        ResolveReshape(in[0].shape, spec, allow_zero_);
    if (!shape.ok()) return shape.status();
    out[0].dtype = in[0].dtype;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }

 private:
  bool allow_zero_, from_attribute_;
  std::vector<int64_t> shape_;
};

}  // namespace

void RegisterReshapeOps(OpRegistry& registry) {
  registry.Register("Identity", FactoryOf<IdentityOp>());
  registry.Register("Flatten", FactoryOf<FlattenOp>());
  registry.Register("Reshape", FactoryOf<ReshapeOp>());
}

}  // namespace coalesce
