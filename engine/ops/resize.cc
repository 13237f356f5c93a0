// Resize and Upsample (engine/schema/resize_schema.h) on the CPU; see
// kernels/cpu/resize.h for the interpolation.
#include "kernels/cpu/resize.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/resize_schema.h"

namespace coalesce {
namespace {

// The kernel's options for the schema's attributes (the enums correspond
// one to one).
kernels::ResizeOptions KernelOptions(const ResizeAttrs& a) {
  kernels::ResizeOptions o;
  o.mode = static_cast<kernels::ResizeMode>(a.mode);
  o.coordinate = static_cast<kernels::ResizeCoordinate>(a.coordinate);
  o.nearest = static_cast<kernels::NearestRounding>(a.nearest);
  o.cubic_coeff_a = a.cubic_coeff_a;
  o.exclude_outside = a.exclude_outside;
  o.antialias = a.antialias;
  o.extrapolation_value = a.extrapolation_value;
  return o;
}
static_assert(static_cast<int>(ResizeMode::kCubic) ==
              static_cast<int>(kernels::ResizeMode::kCubic));
static_assert(static_cast<int>(ResizeCoordinate::kTfCropAndResize) ==
              static_cast<int>(kernels::ResizeCoordinate::kTfCropAndResize));
static_assert(static_cast<int>(NearestRounding::kCeil) ==
              static_cast<int>(kernels::NearestRounding::kCeil));

std::vector<kernels::ResizeAxis> KernelAxes(
    const std::vector<ResizeAxisSpec>& specs) {
  std::vector<kernels::ResizeAxis> axes;
  for (const ResizeAxisSpec& a : specs) {
    axes.push_back({a.in, a.out, a.scale, a.roi_start, a.roi_end});
  }
  return axes;
}

// Resize for one plan's shapes: the kernel's taps built once, so that Run
// allocates nothing.
class PreparedResize : public PreparedKernel {
 public:
  explicit PreparedResize(kernels::ResizePlan plan) : plan_(std::move(plan)) {}

  size_t scratch_bytes() const override { return plan_.scratch_bytes(); }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    plan_.Run(in[0].as<float>(), out[0].as<float>(), scratch);
    return absl::OkStatus();
  }

 private:
  kernels::ResizePlan plan_;
};

class ResizeOp : public SchemaKernel {
 public:
  ResizeOp(const OpNode& node, const ResizeAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs), options_(KernelOptions(attrs)) {}

  // Scales, sizes and roi are known when planning, so the taps are too.
  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<std::vector<ResizeAxisSpec>> axes =
        ResolveResizeAxes(attrs_, in, {});
    if (!axes.ok()) return axes.status();
    return std::make_unique<PreparedResize>(
        kernels::ResizePlan(KernelAxes(*axes), options_));
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<TensorInfo> info;
    std::vector<const char*> data;
    SplitViews(in, &info, &data);
    absl::StatusOr<std::vector<ResizeAxisSpec>> axes =
        ResolveResizeAxes(attrs_, info, data);
    if (!axes.ok()) return axes.status();
    kernels::Resize(in[0].as<float>(), KernelAxes(*axes), options_,
                    out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  const ResizeAttrs attrs_;
  const kernels::ResizeOptions options_;
};

}  // namespace

void RegisterResizeOps(OpRegistry& registry) {
  registry.Register("Resize", SchemaFactoryOf<ResizeOp, ResizeAttrs>());
  registry.Register("Upsample", SchemaFactoryOf<ResizeOp, ResizeAttrs>());
}

}  // namespace coalesce
