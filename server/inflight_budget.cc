#include "server/inflight_budget.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/resource_limits.h"

namespace coalesce {

InflightBudget::Lease& InflightBudget::Lease::operator=(
    Lease&& other) noexcept {
  if (this != &other) {
    Return();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void InflightBudget::Lease::Return() {
  if (budget_ != nullptr) {
    budget_->held_.fetch_sub(bytes_, std::memory_order_relaxed);
  }
  budget_ = nullptr;
  bytes_ = 0;
}

absl::StatusOr<InflightBudget::Lease> InflightBudget::Acquire(int64_t bytes) {
  int64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (limit_ > 0 && bytes > limit_ - held) {
      return absl::UnavailableError(absl::StrCat(
          "the server holds ", held, " bytes of requests; this request's ",
          bytes, " bytes would exceed --max-inflight-bytes ", limit_,
          "; try again later"));
    }
  } while (!held_.compare_exchange_weak(held, held + bytes,
                                        std::memory_order_relaxed));
  return Lease(this, bytes);
}

int64_t DefaultInflightBytes() { return MemoryLimitBytes() / 4; }

}  // namespace coalesce
