// PlanCache: the ExecutionPlans of one Model, keyed by input-shape set, so a
// server alternating batch sizes builds each plan once. Thread-safe. Holds at
// most `max_plans` plans; beyond that, plans are built but not kept.
#ifndef COALESCE_ENGINE_PLAN_CACHE_H_
#define COALESCE_ENGINE_PLAN_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/execution_plan.h"

namespace coalesce {

class PlanCache {
 public:
  static constexpr size_t kDefaultMaxPlans = 256;

  explicit PlanCache(std::shared_ptr<const Model> model,
                     size_t max_plans = kDefaultMaxPlans,
                     const PlanOptions& options = {});

  // The plan for `input_shapes`, built on first use. Errors (bad shapes) are
  // not cached.
  absl::StatusOr<std::shared_ptr<const ExecutionPlan>> Get(
      const std::vector<Shape>& input_shapes);

  // How many plans were built successfully so far.
  int64_t plans_built() const;

 private:
  const std::shared_ptr<const Model> model_;
  const size_t max_plans_;
  const PlanOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::vector<Shape>, std::shared_ptr<const ExecutionPlan>>
      plans_ ABSL_GUARDED_BY(mu_);
  int64_t plans_built_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_PLAN_CACHE_H_
