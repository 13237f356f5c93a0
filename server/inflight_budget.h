// InflightBudget: a server-wide cap on the bytes held by inference requests
// from their arrival until their answer (`--max-inflight-bytes`), so that a
// few clients sending large requests at once get UNAVAILABLE instead of
// taking the server's memory. A request counts its message's size.
//
// Lock-free and thread-safe. A Lease gives its bytes back when destroyed.
#ifndef COALESCE_SERVER_INFLIGHT_BUDGET_H_
#define COALESCE_SERVER_INFLIGHT_BUDGET_H_

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"

namespace coalesce {

class InflightBudget {
 public:
  // Bytes held by one request; returned when it is destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { Return(); }

   private:
    friend class InflightBudget;
    Lease(InflightBudget* budget, int64_t bytes)
        : budget_(budget), bytes_(bytes) {}
    void Return();
    InflightBudget* budget_ = nullptr;
    int64_t bytes_ = 0;
  };

  // `limit` bytes held at once; 0 = unlimited.
  explicit InflightBudget(int64_t limit) : limit_(limit) {}

  // A lease for `bytes`, or Unavailable with the numbers when the bytes
  // already held plus `bytes` would exceed the limit (decided at once,
  // never waits). REQUIRES: bytes >= 0; the budget outlives the lease.
  absl::StatusOr<Lease> Acquire(int64_t bytes);

  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  std::atomic<int64_t> held_{0};
};

// --max-inflight-bytes' default: a quarter of MemoryLimitBytes()
// (resource_limits.h).
int64_t DefaultInflightBytes();

}  // namespace coalesce

#endif  // COALESCE_SERVER_INFLIGHT_BUDGET_H_
