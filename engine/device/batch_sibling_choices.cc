#include "engine/device/batch_sibling_choices.h"

#include <cmath>
#include <utility>

namespace coalesce {

void BatchSiblingChoices::Record(const std::string& operation, int64_t batch,
                                 std::string choice) {
  tuned_[operation][batch] = std::move(choice);
}

std::optional<std::string> BatchSiblingChoices::Nearest(
    const std::string& operation, int64_t batch) const {
  auto it = tuned_.find(operation);
  if (it == tuned_.end() || batch <= 0) return std::nullopt;
  const std::string* best = nullptr;
  double best_distance = 0;
  // Ascending sizes: a later size at the same distance is the larger one.
  for (const auto& [tuned, choice] : it->second) {
    const double distance =
        std::abs(std::log2(static_cast<double>(batch) / tuned));
    if (best == nullptr || distance <= best_distance) {
      best = &choice;
      best_distance = distance;
    }
  }
  return *best;
}

}  // namespace coalesce
