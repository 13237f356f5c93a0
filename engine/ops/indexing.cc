// GatherElements (axis), GatherND (batch_dims) and ScatterND (reduction
// "none"; the others are refused at load): int64 or int32 indices, negative
// counted from the end, any element type. Trilu (upper, optional k input;
// any element type) and CumSum (axis input, exclusive, reverse; FP32, FP64,
// INT32, INT64, UINT32, UINT64). TopK, OneHot and ScatterElements: their
// schemas (engine/schema/indexing_schema.h) say what they compute.
#include "kernels/cpu/indexing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/indexing_schema.h"
#include "engine/string_ref.h"

namespace coalesce {
namespace {

class GatherElementsOp : public SchemaKernel {
 public:
  GatherElementsOp(const OpNode& node, const GatherElementsAttrs& attrs)
      : SchemaKernel(node), axis_(attrs.axis) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const int64_t axis = *NormalizeAxis(axis_, in[0].shape->size());
    const size_t bytes = StorageByteSize(in[0].dtype);
    return in[1].dtype == DataType::kInt64
               ? kernels::GatherElements(in[0].data, *in[0].shape, bytes,
                                         in[1].as<int64_t>(), *in[1].shape,
                                         axis, out[0].data)
               : kernels::GatherElements(in[0].data, *in[0].shape, bytes,
                                         in[1].as<int32_t>(), *in[1].shape,
                                         axis, out[0].data);
  }

 private:
  int64_t axis_;
};

absl::Status ExpectIndices(const TensorInfo& info) {
  if (!info.present() ||
      (info.dtype != DataType::kInt64 && info.dtype != DataType::kInt32)) {
    return absl::InvalidArgumentError("indices must be int64 or int32");
  }
  if (info.shape.empty()) {
    return absl::InvalidArgumentError("indices must have rank 1 or more");
  }
  return absl::OkStatus();
}

Shape Dims(const Shape& shape, size_t begin, size_t end) {
  return Shape(shape.begin() + begin, shape.begin() + end);
}

class GatherNDOp : public SchemaKernel {
 public:
  GatherNDOp(const OpNode& node, const GatherNdAttrs& attrs)
      : SchemaKernel(node), b_(attrs.batch_dims) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& data = *in[0].shape;
    const Shape& indices = *in[1].shape;
    const int64_t k = indices.back();
    const int64_t batch = DimProduct(data, 0, b_);
    const int64_t tuples = DimProduct(indices, b_, indices.size() - 1);
    const Shape inner = Dims(data, b_, data.size());
    const size_t bytes = StorageByteSize(in[0].dtype);
    return in[1].dtype == DataType::kInt64
               ? kernels::GatherND(in[0].data, batch, inner, bytes,
                                   in[1].as<int64_t>(), tuples, k, out[0].data)
               : kernels::GatherND(in[0].data, batch, inner, bytes,
                                   in[1].as<int32_t>(), tuples, k, out[0].data);
  }

 private:
  int64_t b_;
};

class ScatterNDOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<std::string> reduction = node.GetString("reduction", "none");
    if (!reduction.ok()) return reduction.status();
    if (*reduction != "none") {
      return absl::UnimplementedError(absl::StrCat(
          "ScatterND with reduction '", *reduction, "' is not supported"));
    }
    return std::make_unique<ScatterNDOp>();
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() < 3 || !in[0].present() || !in[2].present())
      return absl::InvalidArgumentError("needs data, indices and updates");
    if (absl::Status s = ExpectIndices(in[1]); !s.ok()) return s;
    if (absl::Status s = ExpectInputType(in, 2, in[0].dtype); !s.ok()) return s;
    const Shape& data = in[0].shape;
    const Shape& indices = in[1].shape;
    const int64_t k = indices.back();
    Shape updates = Dims(indices, 0, indices.size() - 1);
    if (k >= 1 && k <= static_cast<int64_t>(data.size()))
      updates.insert(updates.end(), data.begin() + k, data.end());
    if (k < 1 || k > static_cast<int64_t>(data.size()) ||
        in[2].shape != updates) {
      return absl::InvalidArgumentError(absl::StrCat(
          "updates ", ShapeToString(in[2].shape), " and indices ",
          ShapeToString(indices), " do not fit data ", ShapeToString(data)));
    }
    out[0] = {in[0].dtype, data, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& data = *in[0].shape;
    const Shape& indices = *in[1].shape;
    const size_t bytes = StorageByteSize(in[0].dtype);
    const int64_t count = DimProduct(data, 0, data.size());
    if (count > 0) std::memcpy(out[0].data, in[0].data, count * bytes);
    const int64_t k = indices.back();
    const int64_t tuples = DimProduct(indices, 0, indices.size() - 1);
    return in[1].dtype == DataType::kInt64
               ? kernels::ScatterND(data, bytes, in[1].as<int64_t>(), tuples, k,
                                    in[2].data, out[0].data)
               : kernels::ScatterND(data, bytes, in[1].as<int32_t>(), tuples, k,
                                    in[2].data, out[0].data);
  }
};

class TriluOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<int64_t> upper = node.GetInt("upper", 1);
    if (!upper.ok()) return upper.status();
    return std::make_unique<TriluOp>(*upper != 0);
  }
  explicit TriluOp(bool upper) : upper_(upper) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present() || in[0].shape.size() < 2) {
      return absl::InvalidArgumentError("input 0 must have rank 2 or more");
    }
    if (in.size() > 1 && in[1].present()) {
      const int64_t count = DimProduct(in[1].shape, 0, in[1].shape.size());
      if (in[1].dtype != DataType::kInt64 || count != 1) {
        return absl::InvalidArgumentError("k must be an int64 scalar");
      }
    }
    out[0] = {in[0].dtype, in[0].shape, nullptr};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    const int64_t k =
        in.size() > 1 && in[1].present() ? in[1].as<int64_t>()[0] : 0;
    const int64_t rows = s[s.size() - 2], cols = s.back();
    kernels::Trilu(in[0].data, DimProduct(s, 0, s.size() - 2), rows, cols,
                   StorageByteSize(in[0].dtype), k, upper_, out[0].data);
    return absl::OkStatus();
  }

 private:
  bool upper_;
};

class CumSumOp : public SchemaKernel {
 public:
  CumSumOp(const OpNode& node, const CumSumAttrs& attrs)
      : SchemaKernel(node),
        exclusive_(attrs.exclusive),
        reverse_(attrs.reverse) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    absl::StatusOr<int64_t> axis =
        CumSumAxis({in[1].dtype, *in[1].shape, nullptr}, in[1].data, s);
    if (!axis.ok()) return axis.status();
    const int64_t outer = DimProduct(s, 0, *axis);
    const int64_t inner = DimProduct(s, *axis + 1, s.size());
    const int64_t dim = s.empty() ? 1 : s[*axis];
    return VisitNumericType(in[0].dtype, [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                    std::is_same_v<T, uint32_t> ||
                    std::is_same_v<T, uint64_t>) {
        kernels::CumSum<T>(in[0].as<T>(), outer, dim, inner, exclusive_,
                           reverse_, out[0].as<T>());
        return absl::OkStatus();
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

 private:
  bool exclusive_, reverse_;
};

class TopKOp : public SchemaKernel {
 public:
  TopKOp(const OpNode& node, const TopKAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& x = *in[0].shape;
    const int64_t axis = *NormalizeAxis(attrs_.axis, x.size());
    const int64_t k = (*out[0].shape)[axis];
    const int64_t outer = DimProduct(x, 0, axis);
    const int64_t inner = DimProduct(x, axis + 1, x.size());
    int64_t* indices = out.size() > 1 && out[1].data != nullptr
                           ? out[1].as<int64_t>()
                           : nullptr;  // not listed
    return VisitNumericType(in[0].dtype, [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
        kernels::TopK<T>(in[0].as<T>(), outer, x[axis], inner, k,
                         attrs_.largest, out[0].as<T>(), indices);
        return absl::OkStatus();
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

 private:
  const TopKAttrs attrs_;
};

// Reads indices of any numeric type as int64 (float ones truncated).
absl::StatusOr<int64_t> IndexAt(const ConstTensorView& t, int64_t i) {
  int64_t value = 0;
  absl::Status s = VisitNumericType(t.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      // NaN, infinities and values beyond int64 are out of every depth.
      const T v = t.as<T>()[i];
      value = std::isfinite(v) && std::fabs(v) < 0x1p62
                  ? static_cast<int64_t>(v)
                  : std::numeric_limits<int64_t>::max();
      return absl::OkStatus();
    } else if constexpr (std::is_arithmetic_v<T>) {
      value = static_cast<int64_t>(t.as<T>()[i]);
      return absl::OkStatus();
    } else {
      return absl::InvalidArgumentError("indices must be a plain number type");
    }
  });
  if (!s.ok()) return s;
  return value;
}

class OneHotOp : public SchemaKernel {
 public:
  OneHotOp(const OpNode& node, const OneHotAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& y = *out[0].shape;
    const int64_t axis = *NormalizeAxis(attrs_.axis, y.size());
    const int64_t depth = y[axis];
    const int64_t outer = DimProduct(y, 0, axis);
    const int64_t inner = DimProduct(y, axis + 1, y.size());
    const size_t bytes = StorageByteSize(out[0].dtype);
    const char* off = in[2].data;
    const char* on = in[2].data + bytes;
    char* dst = out[0].data;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t d = 0; d < depth; ++d) {
        for (int64_t j = 0; j < inner; ++j) {
          absl::StatusOr<int64_t> index = IndexAt(in[0], o * inner + j);
          if (!index.ok()) return index.status();
          const int64_t hot = *index < 0 ? *index + depth : *index;
          std::memcpy(dst, hot == d ? on : off, bytes);
          dst += bytes;
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  const OneHotAttrs attrs_;
};

// NonZero's coordinates: row d of the output holds axis d's coordinate of
// each nonzero element, in row-major order (the planner computes it: its
// input is known while planning).
class NonZeroOp : public SchemaKernel {
 public:
  NonZeroOp(const OpNode& node, const NonZeroAttrs&) : SchemaKernel(node) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& x = *in[0].shape;
    const int64_t n = DimProduct(x, 0, x.size());
    const int64_t count = (*out[0].shape)[1];
    int64_t* y = out[0].as<int64_t>();
    int64_t k = 0;
    for (int64_t i = 0; i < n && k < count; ++i) {
      if (!ElementIsNonZero(in[0].dtype, in[0].data, i)) continue;
      int64_t rest = i;
      for (size_t d = x.size(); d-- > 0;) {
        y[d * count + k] = rest % x[d];
        rest /= x[d];
      }
      if (x.empty()) y[k] = 0;
      ++k;
    }
    return absl::OkStatus();
  }
};

// Combines an update into the destination: a copy or a reduction in T.
template <typename T>
auto ReductionOf(ScatterReduction reduction) {
  return [reduction](char* dst, const char* src) {
    T a, b;
    std::memcpy(&a, dst, sizeof(T));
    std::memcpy(&b, src, sizeof(T));
    switch (reduction) {
      case ScatterReduction::kNone:
        a = b;
        break;
      case ScatterReduction::kAdd:
        a = a + b;
        break;
      case ScatterReduction::kMul:
        a = a * b;
        break;
      case ScatterReduction::kMax:
        a = std::max(a, b);
        break;
      case ScatterReduction::kMin:
        a = std::min(a, b);
        break;
    }
    std::memcpy(dst, &a, sizeof(T));
  };
}

class ScatterElementsOp : public SchemaKernel {
 public:
  ScatterElementsOp(const OpNode& node, const ScatterElementsAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& data = *in[0].shape;
    const size_t bytes = StorageByteSize(in[0].dtype);
    const int64_t count = DimProduct(data, 0, data.size());
    if (count > 0) std::memcpy(out[0].data, in[0].data, count * bytes);
    const int64_t axis = *NormalizeAxis(attrs_.axis, data.size());
    if (attrs_.reduction == ScatterReduction::kNone) {
      auto copy = [bytes](char* dst, const char* src) {
        std::memcpy(dst, src, bytes);
      };
      return Scatter(in, out[0], axis, bytes, copy);
    }
    return VisitNumericType(in[0].dtype, [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
        return Scatter(in, out[0], axis, bytes,
                       ReductionOf<T>(attrs_.reduction));
      } else {
        return absl::InternalError("type refused by Infer");
      }
    });
  }

 private:
  template <typename Combine>
  static absl::Status Scatter(absl::Span<const ConstTensorView> in,
                              const TensorView& out, int64_t axis, size_t bytes,
                              Combine combine) {
    return in[1].dtype == DataType::kInt64
               ? kernels::ScatterElements(*in[0].shape, bytes,
                                          in[1].as<int64_t>(), *in[1].shape,
                                          axis, in[2].data, out.data, combine)
               : kernels::ScatterElements(*in[0].shape, bytes,
                                          in[1].as<int32_t>(), *in[1].shape,
                                          axis, in[2].data, out.data, combine);
  }

  const ScatterElementsAttrs attrs_;
};

}  // namespace

void RegisterIndexingOps(OpRegistry& registry) {
  registry.Register("TopK", SchemaFactoryOf<TopKOp, TopKAttrs>());
  registry.Register("OneHot", SchemaFactoryOf<OneHotOp, OneHotAttrs>());
  registry.Register("ScatterElements",
                    SchemaFactoryOf<ScatterElementsOp, ScatterElementsAttrs>());
  registry.Register("GatherElements",
                    SchemaFactoryOf<GatherElementsOp, GatherElementsAttrs>());
  registry.Register("GatherND", SchemaFactoryOf<GatherNDOp, GatherNdAttrs>());
  registry.Register("ScatterND", FactoryOf<ScatterNDOp>());
  registry.Register("Trilu", FactoryOf<TriluOp>());
  registry.Register("CumSum", SchemaFactoryOf<CumSumOp, CumSumAttrs>());
  registry.Register("NonZero", SchemaFactoryOf<NonZeroOp, NonZeroAttrs>());
}

}  // namespace coalesce
