// DiagnoseInstance: why an executor instance was not busier over a window of
// time, as a short reason code and one sentence an operator can act on.
//
// Input: the instance's time per state over the window (instance_timeline.h)
// and the model's executions over the same window. The rules, first match
// wins (fractions of the window; busy = computing + copying in + copying out):
//   no_traffic       no batch ran and the queue was empty >= 95%;
//   saturated        busy >= 85%: the instance is the bottleneck;
//   copy_bound       copies >= 40% of busy time and >= 10% of the window;
//   pipeline_blocked batches held the slots off the device >= 25%;
//   assembling       requests waited for a batch to fill >= 25%
//                    (latency_target instead, when the model has a latency
//                    target: the policy chose that wait);
//   small_batches    queue empty >= 50% and batches average < 2 rows
//                    where the model batches: load too low to batch;
//   low_load         queue empty >= 50%;
//   ok               none dominates (the split is given).
// (The server reports "failed" instead, with the fault, for an instance
// whose health() is not OK: server/idle_diagnostics.cc.) Pure function;
// thresholds are documented in docs/metrics.md.
#ifndef COALESCE_BATCHING_IDLE_DIAGNOSIS_H_
#define COALESCE_BATCHING_IDLE_DIAGNOSIS_H_

#include <cstdint>
#include <string>

#include "batching/clock.h"
#include "batching/instance_timeline.h"

namespace coalesce {

struct InstanceWindow {
  InstanceStateTotals states;  // this instance, over the window
  uint64_t executions = 0;     // the model's batches over the window
  uint64_t inferences = 0;     // rows of those batches
  int max_batch_size = 0;      // the model's; 0 = does not batch
  Clock::Duration max_queue_delay{0};
  // With a latency target (latency_target_policy.h): the target and the
  // policy's last decision; zero without one.
  Clock::Duration latency_target{0};
  Clock::Duration target_wait{0};
  int target_batch_size = 0;
};

struct IdleDiagnosis {
  std::string reason;  // one of the codes above
  std::string detail;  // one sentence with the numbers behind it
};

IdleDiagnosis DiagnoseInstance(const InstanceWindow& window);

}  // namespace coalesce

#endif  // COALESCE_BATCHING_IDLE_DIAGNOSIS_H_
