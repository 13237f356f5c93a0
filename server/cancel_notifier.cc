#include "server/cancel_notifier.h"

namespace coalesce {

void CancelNotifier::Add(const std::shared_ptr<ServedModel>& model) {
  if (model == nullptr) return;
  absl::MutexLock lock(&mu_);
  for (const auto& known : models_) {
    if (known.lock() == model) return;
  }
  models_.push_back(model);
}

void CancelNotifier::NotifyAll() {
  std::vector<std::shared_ptr<ServedModel>> live;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& known : models_) {
      if (auto model = known.lock()) live.push_back(std::move(model));
    }
  }
  for (const auto& model : live) model->batcher->NotifyCancelled();
}

}  // namespace coalesce
