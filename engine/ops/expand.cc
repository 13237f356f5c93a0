// Expand (bidirectional broadcast to a shape known while planning) and Tile
// (repeats known while planning). Both are one strided copy whose view a plan
// computes once (engine/ops/strided_view.h); any element type.
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/ops/strided_view.h"
#include "engine/prepared_kernel.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/strided_copy.h"

namespace coalesce {
namespace {

// Expand reads the input with stride 0 along broadcast dims.
StridedView ExpandView(const Shape& in, const Shape& out) {
  return {0, out, kernels::BroadcastStrides(in, out)};
}

// Tile views the output as [r0, d0, r1, d1, ...] and reads the input with
// strides [0, s0, 0, s1, ...].
StridedView TileView(const Shape& in, const Shape& out) {
  const std::vector<int64_t> dense = kernels::DenseStrides(in);
  StridedView view;
  for (size_t d = 0; d < in.size(); ++d) {
    view.dims.push_back(in[d] == 0 ? 0 : out[d] / in[d]);
    view.dims.push_back(in[d]);
    view.strides.push_back(0);
    view.strides.push_back(dense[d]);
  }
  return view;
}

class ExpandOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<ExpandOp>();
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() < 2 || !in[0].present())
      return absl::InvalidArgumentError("Expand needs input and shape");
    absl::StatusOr<std::vector<int64_t>> shape =
        ReadInts(in[1], nullptr, "the shape input");
    if (!shape.ok()) return shape.status();
    std::optional<std::vector<int64_t>> broadcast =
        kernels::BroadcastShapes(in[0].shape, *shape);
    if (!broadcast) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot expand ", ShapeToString(in[0].shape), " to ",
                       ShapeToString(*shape)));
    }
    out[0].dtype = in[0].dtype;
    out[0].shape = *std::move(broadcast);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    if (out[0].shape == nullptr) return absl::OkStatus();  // unnamed output
    CopyViews(in[0], {ExpandView(*in[0].shape, *out[0].shape)}, out);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    if (!out[0].present()) return nullptr;  // Run writes nothing
    return std::make_unique<PreparedStridedCopy>(
        ExpandView(in[0].shape, out[0].shape));
  }
};

class TileOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    return std::make_unique<TileOp>();
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.size() < 2 || !in[0].present())
      return absl::InvalidArgumentError("Tile needs input and repeats");
    absl::StatusOr<std::vector<int64_t>> repeats =
        ReadInts(in[1], nullptr, "the repeats input");
    if (!repeats.ok()) return repeats.status();
    const Shape& s = in[0].shape;
    if (repeats->size() != s.size())
      return absl::InvalidArgumentError("repeats must have one value per axis");
    Shape shape(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      if ((*repeats)[d] < 0)
        return absl::InvalidArgumentError("negative repeat");
      if (__builtin_mul_overflow(s[d], (*repeats)[d], &shape[d])) {
        return absl::InvalidArgumentError(
            absl::StrCat("repeating axis ", d, " of size ", s[d], " ",
                         (*repeats)[d], " times overflows int64"));
      }
    }
    out[0].dtype = in[0].dtype;
    out[0].shape = std::move(shape);
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    if (out[0].shape == nullptr) return absl::OkStatus();  // unnamed output
    CopyViews(in[0], {TileView(*in[0].shape, *out[0].shape)}, out);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    if (!out[0].present()) return nullptr;  // Run writes nothing
    return std::make_unique<PreparedStridedCopy>(
        TileView(in[0].shape, out[0].shape));
  }
};

}  // namespace

void RegisterExpandOps(OpRegistry& registry) {
  registry.Register("Expand", FactoryOf<ExpandOp>());
  registry.Register("Tile", FactoryOf<TileOp>());
}

}  // namespace coalesce
