// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp on float tensors.
// The axes come from the `axes` attribute before opset 18 (ReduceSum: 13) and
// from an optional int64 input since, which must then be a constant (it decides
// the output shape). `keepdims` (default 1) keeps reduced dimensions as 1. With
// no axes, every dimension is reduced, unless `noop_with_empty_axes`
// (axes-input opsets only) makes the node an identity.
#include "kernels/cpu/reduce.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"

namespace coalesce {
namespace {

class ReduceOpKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(
      const OpNode& node, kernels::ReduceOp op, int64_t axes_input_opset) {
    auto r = std::make_unique<ReduceOpKernel>();
    r->op_ = op;
    r->axes_from_input_ = node.opset() >= axes_input_opset;
    absl::StatusOr<int64_t> keepdims = node.GetInt("keepdims", 1);
    if (!keepdims.ok()) return keepdims.status();
    r->keepdims_ = *keepdims != 0;
    if (r->axes_from_input_) {
      absl::StatusOr<int64_t> noop = node.GetInt("noop_with_empty_axes", 0);
      if (!noop.ok()) return noop.status();
      r->noop_with_empty_axes_ = *noop != 0;
      if (node.HasAttribute("axes")) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute 'axes' is not allowed at opset ",
                         node.opset(), "; axes are input 1"));
      }
    } else {
      absl::StatusOr<std::vector<int64_t>> axes = node.GetInts("axes");
      if (!axes.ok()) return axes.status();
      r->axes_ = *std::move(axes);
    }
    return r;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
      return s;
    std::vector<int64_t> axes = axes_;
    if (axes_from_input_ && in.size() > 1 && in[1].present()) {
      if (absl::Status s = ExpectInputType(in, 1, DataType::kInt64); !s.ok())
        return s;
      if (in[1].constant_data == nullptr || in[1].shape.size() != 1) {
        return absl::InvalidArgumentError(
            "axes (input 1) must be a constant 1-D tensor");
      }
      const auto* data = reinterpret_cast<const int64_t*>(in[1].constant_data);
      axes.assign(data, data + in[1].shape[0]);
    }
    absl::StatusOr<std::vector<bool>> reduce = ReducedDims(axes, in[0].shape);
    if (!reduce.ok()) return reduce.status();
    out[0].dtype = DataType::kFp32;
    out[0].shape.clear();
    for (size_t d = 0; d < reduce->size(); ++d) {
      if (!(*reduce)[d]) {
        out[0].shape.push_back(in[0].shape[d]);
      } else if (keepdims_) {
        out[0].shape.push_back(1);
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& shape = *in[0].shape;
    std::vector<int64_t> axes = axes_;
    if (axes_from_input_ && in.size() > 1 && in[1].present()) {
      const int64_t* data = in[1].as<int64_t>();
      axes.assign(data, data + (*in[1].shape)[0]);
    }
    absl::StatusOr<std::vector<bool>> reduce = ReducedDims(axes, shape);
    if (!reduce.ok()) return reduce.status();
    kernels::Reduce(op_, in[0].as<float>(), shape, *reduce, out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  // One flag per dimension of `shape`: reduced or not. Empty `axes` means
  // every dimension, or none under noop_with_empty_axes.
  absl::StatusOr<std::vector<bool>> ReducedDims(
      const std::vector<int64_t>& axes, const Shape& shape) const {
    const int64_t rank = shape.size();
    if (axes.empty()) return std::vector<bool>(rank, !noop_with_empty_axes_);
    std::vector<bool> reduce(rank, false);
    for (int64_t axis : axes) {
      absl::StatusOr<int64_t> a = NormalizeAxis(axis, rank);
      if (!a.ok()) return a.status();
      if (reduce[*a]) {
        return absl::InvalidArgumentError(
            absl::StrCat("axis ", axis, " is listed twice"));
      }
      reduce[*a] = true;
    }
    return reduce;
  }

  kernels::ReduceOp op_ = kernels::ReduceOp::kSum;
  bool axes_from_input_ = false;
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
  std::vector<int64_t> axes_;
};

OpFactory ReduceFactory(kernels::ReduceOp op, int64_t axes_input_opset) {
  return [op, axes_input_opset](const OpNode& node) {
    return ReduceOpKernel::Create(node, op, axes_input_opset);
  };
}

}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  registry.Register("ReduceSum", ReduceFactory(kernels::ReduceOp::kSum, 13));
  registry.Register("ReduceMean", ReduceFactory(kernels::ReduceOp::kMean, 18));
  registry.Register("ReduceMax", ReduceFactory(kernels::ReduceOp::kMax, 18));
  registry.Register("ReduceMin", ReduceFactory(kernels::ReduceOp::kMin, 18));
  registry.Register("ReduceProd", ReduceFactory(kernels::ReduceOp::kProd, 18));
  registry.Register("ReduceL1", ReduceFactory(kernels::ReduceOp::kL1, 18));
  registry.Register("ReduceL2", ReduceFactory(kernels::ReduceOp::kL2, 18));
  registry.Register("ReduceSumSquare",
                    ReduceFactory(kernels::ReduceOp::kSumSquare, 18));
  registry.Register("ReduceLogSum",
                    ReduceFactory(kernels::ReduceOp::kLogSum, 18));
  registry.Register("ReduceLogSumExp",
                    ReduceFactory(kernels::ReduceOp::kLogSumExp, 18));
}

}  // namespace coalesce
