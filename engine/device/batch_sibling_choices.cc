#include "engine/device/batch_sibling_choices.h"

#include <utility>

namespace coalesce {

void BatchSiblingChoices::Record(const std::string& operation, int64_t batch,
                                 std::string choice) {
  tuned_[operation][batch] = std::move(choice);
}

std::optional<std::string> BatchSiblingChoices::NearestAtLeast(
    const std::string& operation, int64_t batch) const {
  auto it = tuned_.find(operation);
  if (it == tuned_.end()) return std::nullopt;
  auto at_least = it->second.lower_bound(batch);
  if (at_least == it->second.end()) return std::nullopt;
  return at_least->second;
}

}  // namespace coalesce
