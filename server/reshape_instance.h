// Triton's `reshape` on inputs and outputs: clients send and receive tensors
// shaped as the config's `dims`; the model sees `reshape.shape`. Both are
// row-major views of the same bytes, so only shapes change: WithReshape wraps
// an ExecutorInstance and rewrites the shapes its slots are given and report,
// nothing is copied. With batching the batch dimension is kept in front of
// both.
//
// A -1 in either shape is the one dimension whose size follows from the
// element count (ReshapeCompatible allows at most one on each side).
#ifndef COALESCE_SERVER_RESHAPE_INSTANCE_H_
#define COALESCE_SERVER_RESHAPE_INSTANCE_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "engine/executor.h"
#include "engine/shape.h"

namespace coalesce {

// `dims` as the client sees the tensor, `reshape` as the model does; both
// without the batch dimension.
struct TensorReshape {
  Shape dims;
  Shape reshape;
};

struct ReshapePlan {
  bool batching = false;
  // In the model's input / output order; nullopt where nothing is reshaped.
  std::vector<std::optional<TensorReshape>> inputs;
  std::vector<std::optional<TensorReshape>> outputs;

  bool empty() const;
};

// OK when `dims` and `reshape` can view the same elements: at most one -1 on
// each side, both or neither having one, and equal products of the fixed
// dimensions. InvalidArgument naming `tensor` otherwise.
absl::Status ReshapeCompatible(const char* kind, const std::string& tensor,
                               const Shape& dims, const Shape& reshape);

// `full` (batch dimension first when batching) re-expressed with `to` in
// place of the per-item shape; -1 in `to` takes what the element count
// leaves. `full` itself when the element counts do not fit.
Shape MapShape(const Shape& full, const Shape& to, bool batching);

// `inner` with its shapes rewritten by `plan`; `inner` itself when the plan
// is empty.
std::unique_ptr<ExecutorInstance> WithReshape(
    std::unique_ptr<ExecutorInstance> inner, ReshapePlan plan);

}  // namespace coalesce

#endif  // COALESCE_SERVER_RESHAPE_INSTANCE_H_
