// BuildNeutralPlan: the device-neutral half of planning a Model for one set of
// input shapes (engine/neutral_plan.h): type and shape inference of every
// value, and the nodes computable at plan time (all inputs known, or only
// their shapes read, and outputs up to 64 KiB) computed on the host by their
// CPU kernels. Every executor, CPU or device, starts from its result.
#ifndef COALESCE_ENGINE_NEUTRAL_PLANNER_H_
#define COALESCE_ENGINE_NEUTRAL_PLANNER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model.h"
#include "engine/neutral_plan.h"
#include "engine/shape.h"

namespace coalesce {

// InvalidArgument naming the input or node when the shapes do not fit the
// model (wrong count, rank or dims; a node's inference fails; a tensor
// would exceed 1 TiB).
absl::StatusOr<std::shared_ptr<const NeutralPlan>> BuildNeutralPlan(
    std::shared_ptr<const Model> model, const std::vector<Shape>& input_shapes);

// The NeutralPlanner of `model`, for device executors.
NeutralPlanner MakeNeutralPlanner(std::shared_ptr<const Model> model);

// Every node of `model` as a NeutralPlan lists them, without shapes (for a
// device's load-time check). Valid while `model` lives.
std::vector<PlanNode> ModelNodes(const Model& model);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_NEUTRAL_PLANNER_H_
