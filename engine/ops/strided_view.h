// StridedView: how an op that only moves elements of input 0 (Slice, Split,
// Expand, Tile) reads one of its outputs: a start offset and element strides
// over the dims StridedCopy walks (kernels/cpu/strided_copy.h). Views come
// from shapes and plan-time constants, so PreparedStridedCopy computes them
// once per plan and a run allocates nothing; the ops' plain Run (used to fold
// constants while planning) computes them on every call. Plain values.
#ifndef COALESCE_ENGINE_OPS_STRIDED_VIEW_H_
#define COALESCE_ENGINE_OPS_STRIDED_VIEW_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/op_kernel.h"
#include "engine/prepared_kernel.h"

namespace coalesce {

struct StridedView {
  int64_t offset = 0;  // elements from the start of input 0
  // The dims StridedCopy walks; their product is the output's element count.
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;  // input 0 element strides, one per dim
};

// Copies views[o] of `in` to out[o] for each output; outputs with no memory
// (unnamed in the node) are skipped.
// REQUIRES: views.size() == out.size(); every view stays inside `in`.
void CopyViews(const ConstTensorView& in, absl::Span<const StridedView> views,
               absl::Span<const TensorView> out);

// CopyViews with the views of one plan's shapes.
class PreparedStridedCopy : public PreparedKernel {
 public:
  explicit PreparedStridedCopy(std::vector<StridedView> views)
      : views_(std::move(views)) {}
  explicit PreparedStridedCopy(StridedView view) {
    views_.push_back(std::move(view));
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    CopyViews(in[0], views_, out);
    return absl::OkStatus();
  }

 private:
  std::vector<StridedView> views_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_STRIDED_VIEW_H_
