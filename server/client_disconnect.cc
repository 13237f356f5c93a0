#include "server/client_disconnect.h"

#include <utility>

namespace coalesce {

bool ClientDisconnect::fired() const {
  absl::MutexLock lock(&mu_);
  return fired_;
}

void ClientDisconnect::OnFire(absl::AnyInvocable<void() &&> callback) {
  {
    absl::MutexLock lock(&mu_);
    if (!fired_) {
      callback_ = std::move(callback);
      return;
    }
  }
  std::move(callback)();
}

void ClientDisconnect::Fire() {
  absl::AnyInvocable<void() &&> callback;
  {
    absl::MutexLock lock(&mu_);
    if (fired_) return;
    fired_ = true;
    callback = std::move(callback_);
  }
  if (callback) std::move(callback)();
}

}  // namespace coalesce
