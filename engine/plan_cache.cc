#include "engine/plan_cache.h"

#include <utility>

namespace coalesce {

PlanCache::PlanCache(std::shared_ptr<const Model> model, size_t max_plans,
                     const PlanOptions& options)
    : model_(std::move(model)), max_plans_(max_plans), options_(options) {}

absl::StatusOr<std::shared_ptr<const ExecutionPlan>> PlanCache::Get(
    const std::vector<Shape>& input_shapes) {
  {
    absl::MutexLock lock(&mu_);
    auto it = plans_.find(input_shapes);
    if (it != plans_.end()) return it->second;
  }
  // Built outside the lock; a racing builder of the same shapes is harmless.
  absl::StatusOr<std::shared_ptr<const ExecutionPlan>> plan =
      ExecutionPlan::Build(model_, input_shapes, options_);
  if (!plan.ok()) return plan.status();
  absl::MutexLock lock(&mu_);
  ++plans_built_;
  if (plans_.size() < max_plans_) {
    auto [it, inserted] = plans_.emplace(input_shapes, *plan);
    return it->second;
  }
  return plan;
}

int64_t PlanCache::plans_built() const {
  absl::MutexLock lock(&mu_);
  return plans_built_;
}

}  // namespace coalesce
