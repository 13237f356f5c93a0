// WindowRecorder: what the load generator's completions report, collected
// per measurement window.
//
// Completion callbacks (gRPC threads) record latencies and errors; the
// measurement controller takes everything recorded since its previous take,
// which ends one window and starts the next at the same instant, so every
// completion lands in exactly one window (the one in which it completed).
// Thread-safe.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_WINDOW_RECORDER_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_WINDOW_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace coalesce::bench {

// A send later than this after its scheduled time counts as late.
inline constexpr int64_t kLateSendNs = 1'000'000;

struct WindowRecord {
  std::vector<int64_t> latencies_ns;  // successful requests, completion order
  std::map<int, int64_t> errors;      // gRPC status code -> count
  std::map<int, std::string> error_examples;  // code -> first message seen
  int64_t sends = 0;                          // open loop: requests sent
  int64_t late_sends = 0;         // open loop: sent > kLateSendNs late
  int64_t max_send_lag_ns = 0;    // open loop: worst send lag
  int64_t total_send_lag_ns = 0;  // open loop: sum of the send lags
};

class WindowRecorder {
 public:
  void RecordSuccess(int64_t latency_ns);
  void RecordError(int grpc_code, const std::string& message);
  // Open loop: a request went out `lag_ns` after its scheduled time.
  void RecordSend(int64_t lag_ns);

  // Everything recorded since the previous call (or construction).
  WindowRecord TakeWindow();

  // Successes and errors recorded since construction.
  int64_t completed_total() const {
    return completed_total_.load(std::memory_order_relaxed);
  }

 private:
  absl::Mutex mu_;
  WindowRecord current_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> completed_total_{0};
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_WINDOW_RECORDER_H_
