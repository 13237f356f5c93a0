// Pad (engine/schema/slice_schema.h) on the CPU. STRING pads with the
// empty string unless constant_value gives one. The pads are known while
// planning, so a plan prepares the kernel's per-axis maps once
// (kernels::PadPlan).
#include "kernels/cpu/pad.h"

#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/numeric_types.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/slice_schema.h"
#include "engine/string_ref.h"
#include "kernels/cpu/cast.h"

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

class PadOp : public SchemaKernel {
 public:
  PadOp(const OpNode& node, const PadAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<TensorInfo> info;
    std::vector<const char*> data;
    SplitViews(in, &info, &data);
    absl::StatusOr<kernels::PadPlan> plan = Plan(info, data);
    if (!plan.ok()) return plan.status();
    alignas(16) char fill[sizeof(StringRef)];
    FillElement(in, attrs_.value, fill);
    plan->Run(in[0].data, fill, StorageByteSize(in[0].dtype), out[0].data);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<kernels::PadPlan> plan = Plan(in, {});
    if (!plan.ok()) return plan.status();
    return std::make_unique<PreparedPad>(*std::move(plan), attrs_.value);
  }

 private:
  // The kernel's plan for input 0's shape and the pads.
  absl::StatusOr<kernels::PadPlan> Plan(
      absl::Span<const TensorInfo> in,
      const std::vector<const char*>& data) const {
    absl::StatusOr<std::vector<int64_t>> pads = PadAmounts(attrs_, in, data);
    if (!pads.ok()) return pads.status();
    const size_t rank = in[0].shape.size();
    return kernels::PadPlan(
        in[0].shape, std::vector<int64_t>(pads->begin(), pads->begin() + rank),
        std::vector<int64_t>(pads->begin() + rank, pads->end()),
        KernelMode(attrs_.mode));
  }

  static kernels::PadMode KernelMode(PadMode mode) {
    switch (mode) {
      case PadMode::kReflect:
        return kernels::PadMode::kReflect;
      case PadMode::kEdge:
        return kernels::PadMode::kEdge;
      case PadMode::kConstant:
        break;
    }
    return kernels::PadMode::kConstant;
  }

  const PadAttrs attrs_;
};

}  // namespace

void RegisterPadOp(OpRegistry& registry) {
  registry.Register("Pad", SchemaFactoryOf<PadOp, PadAttrs>());
}

}  // namespace coalesce
