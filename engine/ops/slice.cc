// Slice and Split: strided views along axes, copied out. Any element type.
// The views depend only on shapes and plan-time values, so a plan computes
// them once (engine/ops/strided_view.h).
// Slice takes starts/ends/axes as attributes before opset 10 and
// starts/ends/axes/steps as inputs from opset 10 (known while planning);
// indices count from the end when negative and are clamped to the axis, steps
// may be negative. Split takes `split` as an attribute before opset 13 and as
// an optional input after; without it the axis splits evenly into the outputs
// (from opset 18 `num_outputs` chunks of ceil(dim / n), the last smaller).
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/strided_view.h"
#include "engine/prepared_kernel.h"
#include "kernels/cpu/strided_copy.h"

namespace coalesce {
namespace {

// Where a slice starts and how it steps along each axis of the data.
struct SliceSpec {
  Shape out_shape;
  std::vector<int64_t> start;  // per data axis
  std::vector<int64_t> step;
};

absl::StatusOr<SliceSpec> ResolveSlice(const Shape& data,
                                       const std::vector<int64_t>& starts,
                                       const std::vector<int64_t>& ends,
                                       std::vector<int64_t> axes,
                                       std::vector<int64_t> steps) {
  const int64_t rank = data.size();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return absl::InvalidArgumentError(
        "starts, ends, axes and steps differ in length");
  }
  SliceSpec spec{data, std::vector<int64_t>(rank, 0),
                 std::vector<int64_t>(rank, 1)};
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    absl::StatusOr<int64_t> axis = NormalizeAxis(axes[i], rank);
    if (!axis.ok()) return axis.status();
    if (seen[*axis]) return absl::InvalidArgumentError("axes repeat");
    seen[*axis] = true;
    const int64_t dim = data[*axis];
    if (steps[i] == 0) return absl::InvalidArgumentError("step is 0");
    // A step of at least the axis selects one element at most: clamping it
    // to +-max(dim, 1) changes nothing and keeps the arithmetic in range.
    const int64_t bound = std::max<int64_t>(dim, 1);
    const int64_t step = std::clamp<int64_t>(steps[i], -bound, bound);
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else if (dim == 0) {
      count = 0;  // clamp's range [0, -1] would be empty
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    spec.out_shape[*axis] = count;
    spec.start[*axis] = count > 0 ? start : 0;
    spec.step[*axis] = step;
  }
  return spec;
}

// The view of a tensor of shape `data` that `spec` selects.
StridedView SliceView(const Shape& data, const SliceSpec& spec) {
  StridedView view{0, spec.out_shape, kernels::DenseStrides(data)};
  for (size_t d = 0; d < data.size(); ++d) {
    view.offset += spec.start[d] * view.strides[d];
    view.strides[d] *= spec.step[d];
  }
  return view;
}

class SliceOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<SliceOp>();
    op->from_inputs_ = node.opset() >= 10;
    if (op->from_inputs_) {
      if (node.num_inputs() < 3)
        return absl::InvalidArgumentError("Slice needs starts and ends inputs");
      return op;
    }
    for (auto [name, field] : {std::pair{"starts", &op->starts_},
                               {"ends", &op->ends_},
                               {"axes", &op->axes_}}) {
      absl::StatusOr<std::vector<int64_t>> v = node.GetInts(name);
      if (!v.ok()) return v.status();
      *field = *std::move(v);
    }
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    absl::StatusOr<SliceSpec> spec = Resolve(in, {});
    if (!spec.ok()) return spec.status();
    out[0].dtype = in[0].dtype;
    out[0].shape = std::move(spec->out_shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<TensorInfo> info;
    std::vector<const char*> data;
    SplitViews(in, &info, &data);
    absl::StatusOr<SliceSpec> spec = Resolve(info, data);
    if (!spec.ok()) return spec.status();
    CopyViews(in[0], {SliceView(*in[0].shape, *spec)}, out);
    return absl::OkStatus();
  }

  // Starts, ends, axes and steps are known when planning, so the view is too.
  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    absl::StatusOr<SliceSpec> spec = Resolve(in, {});
    if (!spec.ok()) return spec.status();
    return std::make_unique<PreparedStridedCopy>(SliceView(in[0].shape, *spec));
  }

 private:
  // `data` (Run) holds the inputs' memory; empty at Infer time.
  absl::StatusOr<SliceSpec> Resolve(
      absl::Span<const TensorInfo> in,
      const std::vector<const char*>& data) const {
    if (!from_inputs_)
      return ResolveSlice(in[0].shape, starts_, ends_, axes_, {});
    std::vector<int64_t> lists[4];
    const char* names[4] = {"starts", "ends", "axes", "steps"};
    for (int i = 0; i < 4; ++i) {
      const size_t input = i + 1;
      if (input >= in.size() || !in[input].present()) continue;
      absl::StatusOr<std::vector<int64_t>> v =
          ReadInts(in[input], data.empty() ? nullptr : data[input], names[i]);
      if (!v.ok()) return v.status();
      lists[i] = *std::move(v);
    }
    return ResolveSlice(in[0].shape, lists[0], lists[1], lists[2], lists[3]);
  }

  bool from_inputs_ = true;
  std::vector<int64_t> starts_, ends_, axes_;
};

class SplitOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<SplitOp>();
    absl::StatusOr<int64_t> axis = node.GetInt("axis", 0);
    if (!axis.ok()) return axis.status();
    op->axis_ = *axis;
    op->split_from_input_ = node.opset() >= 13;
    absl::StatusOr<std::vector<int64_t>> split = node.GetInts("split");
    if (!split.ok()) return split.status();
    op->split_ = *std::move(split);
    absl::StatusOr<int64_t> num = node.GetInt("num_outputs", 0);
    if (!num.ok()) return num.status();
    if (node.opset() >= 18 && node.HasAttribute("num_outputs") &&
        *num != node.num_outputs()) {
      return absl::InvalidArgumentError(
          "num_outputs differs from the number of outputs");
    }
    op->ceil_chunks_ = node.opset() >= 18;
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, in[0].shape.size());
    if (!axis.ok()) return axis.status();
    absl::StatusOr<std::vector<int64_t>> sizes =
        Sizes(in, {}, in[0].shape[*axis], out.size());
    if (!sizes.ok()) return sizes.status();
    for (size_t o = 0; o < out.size(); ++o) {
      out[o].dtype = in[0].dtype;
      out[o].shape = in[0].shape;
      out[o].shape[*axis] = (*sizes)[o];
    }
    return absl::OkStatus();
  }

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
    absl::StatusOr<int64_t> axis = NormalizeAxis(axis_, shape.size());
    if (!axis.ok()) return axis.status();
    absl::StatusOr<std::vector<int64_t>> sizes =
        Sizes(in, data, shape[*axis], num_outputs);
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

  absl::StatusOr<std::vector<int64_t>> Sizes(
      absl::Span<const TensorInfo> in, const std::vector<const char*>& data,
      int64_t dim, size_t num_outputs) const {
    std::vector<int64_t> sizes = split_;
    if (split_from_input_ && in.size() > 1 && in[1].present()) {
      absl::StatusOr<std::vector<int64_t>> v =
          ReadInts(in[1], data.empty() ? nullptr : data[1], "the split input");
      if (!v.ok()) return v.status();
      sizes = *std::move(v);
    }
    if (sizes.empty()) {
      const int64_t n = num_outputs;
      if (!ceil_chunks_ && dim % n != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("axis of ", dim, " does not split evenly into ", n));
      }
      const int64_t chunk = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i)
        sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
    }
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) return absl::InvalidArgumentError("negative split size");
      if (__builtin_add_overflow(total, s, &total))
        return absl::InvalidArgumentError("split sizes sum beyond int64");
    }
    if (sizes.size() != num_outputs || total != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("split sizes do not cover the axis of ", dim, " with ",
                       num_outputs, " outputs"));
    }
    return sizes;
  }

  int64_t axis_ = 0;
  bool split_from_input_ = true, ceil_chunks_ = false;
  std::vector<int64_t> split_;
};

}  // namespace

void RegisterSliceOps(OpRegistry& registry) {
  registry.Register("Slice", FactoryOf<SliceOp>());
  registry.Register("Split", FactoryOf<SplitOp>());
}

}  // namespace coalesce
