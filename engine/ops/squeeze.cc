// Squeeze and Unsqueeze: remove or insert size-1 dims. Axes come from the
// `axes` attribute before opset 13 and from the optional second input from
// opset 13 (known while planning). They copy; any element type.
#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/copying_op.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/copy.h"

namespace coalesce {
namespace {

class SqueezeFamilyOp : public CopyingOp {
 public:
  SqueezeFamilyOp(bool squeeze, bool axes_from_input, std::vector<int64_t> axes)
      : squeeze_(squeeze),
        axes_from_input_(axes_from_input),
        axes_(std::move(axes)) {}

  template <bool kSqueeze>
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<std::vector<int64_t>> axes = node.GetInts("axes");
    if (!axes.ok()) return axes.status();
    const bool from_input = node.opset() >= 13;
    if (from_input && !kSqueeze && node.num_inputs() < 2)
      return absl::InvalidArgumentError("Unsqueeze needs an axes input");
    if (!from_input && !kSqueeze && axes->empty())
      return absl::InvalidArgumentError("attribute 'axes' is required");
    return std::make_unique<SqueezeFamilyOp>(kSqueeze, from_input, *axes);
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present())
      return absl::InvalidArgumentError("input 0 is required");
    std::vector<int64_t> axes = axes_;
    if (axes_from_input_ && in.size() > 1 && in[1].present()) {
      absl::StatusOr<std::vector<int64_t>> read =
          ReadInts(in[1], nullptr, "the axes input");
      if (!read.ok()) return read.status();
      axes = *std::move(read);
    }
    absl::StatusOr<Shape> shape =
        squeeze_ ? Squeezed(in[0].shape, axes) : Unsqueezed(in[0].shape, axes);
    if (!shape.ok()) return shape.status();
    out[0].dtype = in[0].dtype;
    out[0].shape = *std::move(shape);
    return absl::OkStatus();
  }

 private:
  // Normalized, sorted axes; InvalidArgument on a repeat or out of range.
  static absl::StatusOr<std::vector<int64_t>> Normalize(
      std::vector<int64_t> axes, int64_t rank) {
    for (int64_t& a : axes) {
      absl::StatusOr<int64_t> n = NormalizeAxis(a, rank);
      if (!n.ok()) return n.status();
      a = *n;
    }
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      return absl::InvalidArgumentError("axes repeat");
    return axes;
  }

  static absl::StatusOr<Shape> Squeezed(const Shape& in,
                                        const std::vector<int64_t>& axes) {
    Shape out;
    if (axes.empty()) {
      for (int64_t d : in)
        if (d != 1) out.push_back(d);
      return out;
    }
    absl::StatusOr<std::vector<int64_t>> sorted = Normalize(axes, in.size());
    if (!sorted.ok()) return sorted.status();
    for (size_t d = 0; d < in.size(); ++d) {
      const bool drop = std::binary_search(sorted->begin(), sorted->end(),
                                           static_cast<int64_t>(d));
      if (drop && in[d] != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot squeeze axis ", d, " of size ", in[d]));
      }
      if (!drop) out.push_back(in[d]);
    }
    return out;
  }

  static absl::StatusOr<Shape> Unsqueezed(const Shape& in,
                                          const std::vector<int64_t>& axes) {
    const int64_t rank = in.size() + axes.size();
    absl::StatusOr<std::vector<int64_t>> sorted = Normalize(axes, rank);
    if (!sorted.ok()) return sorted.status();
    Shape out;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::binary_search(sorted->begin(), sorted->end(), d))
        out.push_back(1);
      else
        out.push_back(in[next++]);
    }
    return out;
  }

  bool squeeze_, axes_from_input_;
  std::vector<int64_t> axes_;
};

}  // namespace

void RegisterSqueezeOps(OpRegistry& registry) {
  registry.Register("Squeeze", &SqueezeFamilyOp::Create<true>);
  registry.Register("Unsqueeze", &SqueezeFamilyOp::Create<false>);
}

}  // namespace coalesce
