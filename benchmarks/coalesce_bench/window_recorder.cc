#include "benchmarks/coalesce_bench/window_recorder.h"

#include <algorithm>
#include <utility>

namespace coalesce::bench {

void WindowRecorder::RecordSuccess(int64_t latency_ns) {
  {
    absl::MutexLock lock(&mu_);
    current_.latencies_ns.push_back(latency_ns);
  }
  completed_total_.fetch_add(1, std::memory_order_relaxed);
}

void WindowRecorder::RecordError(int grpc_code, const std::string& message) {
  {
    absl::MutexLock lock(&mu_);
    if (++current_.errors[grpc_code] == 1) {
      current_.error_examples[grpc_code] = message;
    }
  }
  completed_total_.fetch_add(1, std::memory_order_relaxed);
}

void WindowRecorder::RecordSend(int64_t lag_ns) {
  absl::MutexLock lock(&mu_);
  ++current_.sends;
  if (lag_ns > kLateSendNs) ++current_.late_sends;
  current_.max_send_lag_ns = std::max(current_.max_send_lag_ns, lag_ns);
  current_.total_send_lag_ns += lag_ns;
}

WindowRecord WindowRecorder::TakeWindow() {
  WindowRecord taken;
  absl::MutexLock lock(&mu_);
  std::swap(taken, current_);
  // Keep the capacity for the next window: avoids regrowing under the lock.
  current_.latencies_ns.reserve(taken.latencies_ns.size());
  return taken;
}

}  // namespace coalesce::bench
