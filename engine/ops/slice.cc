// Slice and Split (engine/schema/slice_schema.h) on the CPU: strided views
// along axes, copied out. The views depend only on shapes and plan-time
// values, so a plan computes them once (engine/ops/strided_view.h).
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/strided_view.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/slice_schema.h"
#include "kernels/cpu/strided_copy.h"

namespace coalesce {
namespace {

// The view of a tensor of shape `data` that `spec` selects.
StridedView SliceView(const Shape& data, const SliceSpec& spec) {
  StridedView view{0, spec.out_shape, kernels::DenseStrides(data)};
  for (size_t d = 0; d < data.size(); ++d) {
    view.offset += spec.start[d] * view.strides[d];
    view.strides[d] *= spec.step[d];
  }
  return view;
}

class SliceOp : public SchemaKernel {
 public:
  SliceOp(const OpNode& node, const SliceAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<TensorInfo> info;
    std::vector<const char*> data;
    SplitViews(in, &info, &data);
    absl::StatusOr<SliceSpec> spec = ResolveSliceSpec(attrs_, info, data);
    if (!spec.ok()) return spec.status();
    CopyViews(in[0], {SliceView(*in[0].shape, *spec)}, out);
    return absl::OkStatus();
  }

  // Starts, ends, axes and steps are known when planning, so the view is too.
  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<SliceSpec> spec = ResolveSliceSpec(attrs_, in, {});
    if (!spec.ok()) return spec.status();
    return std::make_unique<PreparedStridedCopy>(SliceView(in[0].shape, *spec));
  }

 private:
  const SliceAttrs attrs_;
};

class SplitOp : public SchemaKernel {
 public:
  SplitOp(const OpNode& node, const SplitAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<TensorInfo> info;
    std::vector<const char*> data;
    SplitViews(in, &info, &data);
    absl::StatusOr<std::vector<StridedView>> views =
        PartViews(info, data, out.size());
    if (!views.ok()) return views.status();
    CopyViews(in[0], *views, out);
    return absl::OkStatus();
  }

  // The split sizes are known when planning, so the views are too.
  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<std::vector<StridedView>> views =
        PartViews(in, {}, out.size());
    if (!views.ok()) return views.status();
    return std::make_unique<PreparedStridedCopy>(*std::move(views));
  }

 private:
  // Output o reads the o-th part of input 0 along the axis. `data` (Run)
  // holds the inputs' memory; empty when planning.
  absl::StatusOr<std::vector<StridedView>> PartViews(
      absl::Span<const TensorInfo> in, const std::vector<const char*>& data,
      size_t num_outputs) const {
    const Shape& shape = in[0].shape;
    absl::StatusOr<int64_t> axis = NormalizeAxis(attrs_.axis, shape.size());
    if (!axis.ok()) return axis.status();
    absl::StatusOr<std::vector<int64_t>> sizes =
        SplitSizes(attrs_, in, data, shape[*axis], num_outputs);
    if (!sizes.ok()) return sizes.status();
    const std::vector<int64_t> dense = kernels::DenseStrides(shape);
    std::vector<StridedView> views;
    int64_t begin = 0;
    for (int64_t size : *sizes) {
      views.push_back({begin * dense[*axis], shape, dense});
      views.back().dims[*axis] = size;
      begin += size;
    }
    return views;
  }

  const SplitAttrs attrs_;
};

}  // namespace

void RegisterSliceOps(OpRegistry& registry) {
  registry.Register("Slice", SchemaFactoryOf<SliceOp, SliceAttrs>());
  registry.Register("Split", SchemaFactoryOf<SplitOp, SplitAttrs>());
}

}  // namespace coalesce
