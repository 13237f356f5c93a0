// Pad with mode constant, reflect or edge. Before opset 11 pads (`paddings`
// in opset 1) and the constant `value` are attributes; from opset 11 they are
// inputs (pads known while planning; optional constant_value), and from
// opset 18 an optional `axes` input picks the padded axes. Pads are
// [begin of each axis..., end of each axis...]; negative pads crop. Any
// element type; STRING pads with the empty string unless constant_value
// gives one. The pads are known while planning, so a plan prepares the
// kernel's per-axis maps once (kernels::PadPlan).
#include "kernels/cpu/pad.h"

#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/string_ref.h"
#include "kernels/cpu/cast.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

// The element kConstant pads with, in the input's type, into `fill`: the
// constant_value input when given, else `value`; zero bytes (the empty
// string for STRING) where `value` has no cast to the type.
void FillElement(absl::Span<const ConstTensorView> in, float value,
                 char (&fill)[sizeof(StringRef)]) {
  std::memset(fill, 0, sizeof(fill));
  if (in.size() > 2 && in[2].present()) {
    std::memcpy(fill, in[2].data, StorageByteSize(in[0].dtype));
  } else if (std::optional<kernels::CastType> to = CastTypeOf(in[0].dtype)) {
    kernels::Cast(kernels::CastType::kFloat32, &value, *to, 1, fill);
  }
}

// Pad for one plan's shapes and pads.
class PreparedPad : public PreparedKernel {
 public:
  PreparedPad(kernels::PadPlan plan, float value)
      : plan_(std::move(plan)), value_(value) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    alignas(16) char fill[sizeof(StringRef)];
    FillElement(in, value_, fill);
    plan_.Run(in[0].data, fill, StorageByteSize(in[0].dtype), out[0].data);
    return absl::OkStatus();
  }

 private:
  kernels::PadPlan plan_;
  float value_;
};

class PadOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<PadOp>();
    std::string mode = "constant";
    for (const onnx::AttributeProto& attr : node.proto().attribute())
      if (attr.name() == "mode") mode = attr.s();
    if (mode == "constant")
      op->mode_ = kernels::PadMode::kConstant;
    else if (mode == "reflect")
      op->mode_ = kernels::PadMode::kReflect;
    else if (mode == "edge")
      op->mode_ = kernels::PadMode::kEdge;
    else
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported pad mode '", mode, "'"));
    op->from_inputs_ = node.opset() >= 11;
    if (!op->from_inputs_) {
      absl::StatusOr<std::vector<int64_t>> pads =
          node.GetInts(node.opset() < 2 ? "paddings" : "pads");
      if (!pads.ok()) return pads.status();
      op->pads_ = *std::move(pads);
      absl::StatusOr<float> value = node.GetFloat("value", 0.0f);
      if (!value.ok()) return value.status();
      op->value_ = *value;
    } else if (node.num_inputs() < 2) {
      return absl::InvalidArgumentError("Pad needs a pads input");
    }
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    absl::StatusOr<std::vector<int64_t>> pads = Pads(in, {});
    if (!pads.ok()) return pads.status();
    const Shape& s = in[0].shape;
    const size_t rank = s.size();
    Shape shape(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (__builtin_add_overflow(s[d], (*pads)[d], &shape[d]) ||
          __builtin_add_overflow(shape[d], (*pads)[d + rank], &shape[d])) {
        return absl::InvalidArgumentError(
            absl::StrCat("pads of axis ", d, " overflow int64"));
      }
      // Cropping more than the axis is no tensor (and would let a pad near
      // INT64_MIN reach the kernel's coordinate arithmetic).
      if (shape[d] < 0 || (*pads)[d] < -s[d] || (*pads)[d + rank] < -s[d])
        return absl::InvalidArgumentError("pads crop below zero");
      const bool padded = (*pads)[d] > 0 || (*pads)[d + rank] > 0;
      if (padded && mode_ != kernels::PadMode::kConstant && s[d] == 0)
        return absl::InvalidArgumentError(
            "cannot reflect or edge-pad an empty axis");
    }
    if (in.size() > 2 && in[2].present() && in[2].dtype != in[0].dtype)
      return absl::InvalidArgumentError("constant_value differs in type");
    out[0].dtype = in[0].dtype;
    out[0].shape = std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<TensorInfo> info;
    std::vector<const char*> data;
    SplitViews(in, &info, &data);
    absl::StatusOr<kernels::PadPlan> plan = Plan(info, data);
    if (!plan.ok()) return plan.status();
    alignas(16) char fill[sizeof(StringRef)];
    FillElement(in, value_, fill);
    plan->Run(in[0].data, fill, StorageByteSize(in[0].dtype), out[0].data);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<kernels::PadPlan> plan = Plan(in, {});
    if (!plan.ok()) return plan.status();
    return std::make_unique<PreparedPad>(*std::move(plan), value_);
  }

 private:
  // The kernel's plan for input 0's shape and the pads.
  absl::StatusOr<kernels::PadPlan> Plan(
      absl::Span<const TensorInfo> in,
      const std::vector<const char*>& data) const {
    absl::StatusOr<std::vector<int64_t>> pads = Pads(in, data);
    if (!pads.ok()) return pads.status();
    const size_t rank = in[0].shape.size();
    return kernels::PadPlan(
        in[0].shape, std::vector<int64_t>(pads->begin(), pads->begin() + rank),
        std::vector<int64_t>(pads->begin() + rank, pads->end()), mode_);
  }

  // Full [begins..., ends...] for every axis. `data` is empty at Infer time.
  absl::StatusOr<std::vector<int64_t>> Pads(
      absl::Span<const TensorInfo> in,
      const std::vector<const char*>& data) const {
    const int64_t rank = in[0].shape.size();
    std::vector<int64_t> pads = pads_;
    auto at = [&](size_t i) { return data.empty() ? nullptr : data[i]; };
    if (from_inputs_) {
      absl::StatusOr<std::vector<int64_t>> v =
          ReadInts(in[1], at(1), "the pads input");
      if (!v.ok()) return v.status();
      pads = *std::move(v);
    }
    if (from_inputs_ && in.size() > 3 && in[3].present()) {
      absl::StatusOr<std::vector<int64_t>> axes =
          ReadInts(in[3], at(3), "the axes input");
      if (!axes.ok()) return axes.status();
      if (pads.size() != 2 * axes->size())
        return absl::InvalidArgumentError("pads must be twice as long as axes");
      std::vector<int64_t> full(2 * rank, 0);
      for (size_t i = 0; i < axes->size(); ++i) {
        absl::StatusOr<int64_t> axis = NormalizeAxis((*axes)[i], rank);
        if (!axis.ok()) return axis.status();
        full[*axis] = pads[i];
        full[*axis + rank] = pads[i + axes->size()];
      }
      pads = std::move(full);
    }
    if (static_cast<int64_t>(pads.size()) != 2 * rank) {
      return absl::InvalidArgumentError(absl::StrCat("pads has ", pads.size(),
                                                     " values, rank ", rank,
                                                     " needs ", 2 * rank));
    }
    return pads;
  }

  kernels::PadMode mode_ = kernels::PadMode::kConstant;
  bool from_inputs_ = true;
  std::vector<int64_t> pads_;
  float value_ = 0.0f;
};

}  // namespace

void RegisterPadOp(OpRegistry& registry) {
  registry.Register("Pad", FactoryOf<PadOp>());
}

}  // namespace coalesce
