// Shape, ConstantOfShape and Range: ops that make tensors from shapes and
// scalars. Their outputs are usually known while planning (the plan computes
// them once), which is what lets exporters' Shape -> Gather -> Concat ->
// Reshape chains give Reshape a known shape.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/onnx_import.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/string_ref.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

// Shape (start/end from opset 15): the input's dims[start:end] as int64.
class ShapeOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<int64_t> start = node.GetInt("start", 0);
    if (!start.ok()) return start.status();
    absl::StatusOr<int64_t> end =
        node.GetInt("end", std::numeric_limits<int64_t>::max());
    if (!end.ok()) return end.status();
    return std::make_unique<ShapeOp>(*start, *end);
  }
  ShapeOp(int64_t start, int64_t end) : start_(start), end_(end) {}

  bool ReadsOnlyInputShapes() const override { return true; }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    auto [begin, end] = Range(in[0].shape.size());
    out[0].dtype = DataType::kInt64;
    out[0].shape = {end - begin};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& shape = *in[0].shape;
    auto [begin, end] = Range(shape.size());
    std::copy(shape.begin() + begin, shape.begin() + end, out[0].as<int64_t>());
    return absl::OkStatus();
  }

 private:
  // [start, end) clamped to [0, rank], negatives counted from the end.
  std::pair<int64_t, int64_t> Range(int64_t rank) const {
    auto clamp = [rank](int64_t i) {
      if (i < 0) i += rank;
      return std::clamp<int64_t>(i, 0, rank);
    };
    const int64_t begin = clamp(start_);
    return {begin, std::max(begin, clamp(end_))};
  }

  int64_t start_, end_;
};

// ConstantOfShape: a tensor of the input's shape filled with `value` (a
// one-element tensor attribute; float 0 by default).
class ConstantOfShapeOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<ConstantOfShapeOp>();
    std::memset(op->value_, 0, sizeof(op->value_));
    for (const onnx::AttributeProto& attr : node.proto().attribute()) {
      if (attr.name() != "value") continue;
      absl::StatusOr<std::unique_ptr<ConstantTensor>> value =
          ImportTensor(attr.t());
      if (!value.ok()) return value.status();
      if ((*value)->dtype == DataType::kBytes) {
        return absl::InvalidArgumentError(
            "attribute 'value' of type STRING is not supported");
      }
      if ((*value)->byte_size != ElementByteSize((*value)->dtype)) {
        return absl::InvalidArgumentError(
            "attribute 'value' must hold one element");
      }
      op->dtype_ = (*value)->dtype;
      std::memcpy(op->value_, (*value)->bytes(), (*value)->byte_size);
    }
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    absl::StatusOr<std::vector<int64_t>> shape =
        ReadInts(in.empty() ? TensorInfo{} : in[0], nullptr, "the shape input");
    if (!shape.ok()) return shape.status();
    if (in[0].shape.size() != 1)
      return absl::InvalidArgumentError("the shape input must be 1-D");
    for (int64_t d : *shape) {
      if (d < 0)
        return absl::InvalidArgumentError(
            absl::StrCat("invalid dimension ", d));
    }
    out[0].dtype = dtype_;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const size_t element = ElementByteSize(dtype_);
    const int64_t n = DimProduct(*out[0].shape, 0, out[0].shape->size());
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(out[0].data + i * element, value_, element);
    return absl::OkStatus();
  }

 private:
  DataType dtype_ = DataType::kFp32;
  alignas(8) char value_[8];
};

// Range(start, limit, delta): scalars of one type; max(ceil((limit - start) /
// delta), 0) values start + i * delta. Inputs must be known while planning.
class RangeOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<RangeOp>();
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() != 3)
      return absl::InvalidArgumentError("Range needs 3 inputs");
    const DataType type = in[0].dtype;
    if (type != DataType::kFp32 && type != DataType::kInt64 &&
        type != DataType::kInt32) {
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported type ", std::string(DataTypeName(type))));
    }
    for (int i = 0; i < 3; ++i) {
      if (absl::Status s = ExpectInputType(in, i, type); !s.ok()) return s;
      if (!in[i].shape.empty() &&
          DimProduct(in[i].shape, 0, in[i].shape.size()) != 1)
        return absl::InvalidArgumentError(
            absl::StrCat("input ", i, " must be a scalar"));
      if (in[i].constant_data == nullptr)
        return absl::InvalidArgumentError(
            absl::StrCat("input ", i, " must be known when planning"));
    }
    const double start = Scalar(type, in[0].constant_data),
                 limit = Scalar(type, in[1].constant_data),
                 delta = Scalar(type, in[2].constant_data);
    if (delta == 0) return absl::InvalidArgumentError("delta is 0");
    const double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(kMaxTensorBytes))) {  // NaN too
      return absl::InvalidArgumentError(
          absl::StrCat("Range from ", start, " to ", limit, " by ", delta,
                       " would have ", count, " elements"));
    }
    out[0].dtype = type;
    // A negative count (limit behind start) is an empty range; casting a
    // large one to int64 would be undefined.
    out[0].shape = {count <= 0 ? 0 : static_cast<int64_t>(count)};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const int64_t n = (*out[0].shape)[0];
    switch (in[0].dtype) {
      case DataType::kFp32:
        Fill<float>(in, n, out[0]);
        break;
      case DataType::kInt32:
        Fill<int32_t>(in, n, out[0]);
        break;
      default:
        Fill<int64_t>(in, n, out[0]);
    }
    return absl::OkStatus();
  }

 private:
  static double Scalar(DataType type, const char* data) {
    switch (type) {
      case DataType::kFp32:
        return *reinterpret_cast<const float*>(data);
      case DataType::kInt32:
        return *reinterpret_cast<const int32_t*>(data);
      default:
        return static_cast<double>(*reinterpret_cast<const int64_t*>(data));
    }
  }
  template <typename T>
  static void Fill(absl::Span<const ConstTensorView> in, int64_t n,
                   const TensorView& out) {
    const T start = *in[0].as<T>(), delta = *in[2].as<T>();
    if constexpr (std::is_integral_v<T>) {
      // Every value lies between start and limit, but i * delta alone may
      // not fit in T: computed modulo 2^N, which gives the exact value.
      using U = std::make_unsigned_t<T>;
      for (int64_t i = 0; i < n; ++i) {
        out.as<T>()[i] = static_cast<T>(
            static_cast<U>(start) + static_cast<U>(i) * static_cast<U>(delta));
      }
    } else {
      for (int64_t i = 0; i < n; ++i)
        out.as<T>()[i] = start + static_cast<T>(i) * delta;
    }
  }
};

}  // namespace

void RegisterShapeOps(OpRegistry& registry) {
  registry.Register("Shape", FactoryOf<ShapeOp>());
  registry.Register("ConstantOfShape", FactoryOf<ConstantOfShapeOp>());
  registry.Register("Range", FactoryOf<RangeOp>());
}

}  // namespace coalesce
