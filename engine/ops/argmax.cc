// ArgMax along `axis` (default 0) with `keepdims` (default 1) and, from
// opset 12, `select_last_index`. float32, int64 and int32 inputs; int64
// output.
#include "kernels/cpu/argmax.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"

namespace coalesce {
namespace {

class ArgMaxOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<int64_t> axis = node.GetInt("axis", 0);
    if (!axis.ok()) return axis.status();
    absl::StatusOr<int64_t> keepdims = node.GetInt("keepdims", 1);
    if (!keepdims.ok()) return keepdims.status();
    absl::StatusOr<int64_t> last = node.GetInt("select_last_index", 0);
    if (!last.ok()) return last.status();
    return std::make_unique<ArgMaxOp>(*axis, *keepdims != 0, *last != 0);
  }
  ArgMaxOp(int64_t axis, bool keepdims, bool select_last)
      : axis_(axis), keepdims_(keepdims), select_last_(select_last) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    const DataType t = in[0].dtype;
    if (t != DataType::kFp32 && t != DataType::kInt64 && t != DataType::kInt32)
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported type ", std::string(DataTypeName(t))));
    const Shape& s = in[0].shape;
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, s.size());
    if (!axis.ok()) return axis.status();
    if (s[*axis] == 0)
      return absl::InvalidArgumentError("ArgMax over an empty axis");
    Shape shape = s;
    if (keepdims_)
      shape[*axis] = 1;
    else
      shape.erase(shape.begin() + *axis);
    out[0].dtype = DataType::kInt64;
    out[0].shape = std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    const int64_t axis = *NormalizeAxis(axis_, s.size());
    const int64_t outer = DimProduct(s, 0, axis),
                  inner = DimProduct(s, axis + 1, s.size());
    int64_t* dst = out[0].as<int64_t>();
    switch (in[0].dtype) {
      case DataType::kFp32:
        kernels::ArgMax(in[0].as<float>(), outer, s[axis], inner, select_last_,
                        dst);
        break;
      case DataType::kInt64:
        kernels::ArgMax(in[0].as<int64_t>(), outer, s[axis], inner,
                        select_last_, dst);
        break;
      default:
        kernels::ArgMax(in[0].as<int32_t>(), outer, s[axis], inner,
                        select_last_, dst);
    }
    return absl::OkStatus();
  }

 private:
  int64_t axis_;
  bool keepdims_, select_last_;
};

}  // namespace

void RegisterArgMaxOp(OpRegistry& registry) {
  registry.Register("ArgMax", FactoryOf<ArgMaxOp>());
}

}  // namespace coalesce
