// SchedulerOptions and QueuePolicy: everything a DynamicBatcher is configured
// with, mirroring ModelConfig's max_batch_size, input/output and
// dynamic_batching fields. Plain value types; ValidateSchedulerOptions says
// whether a set of options is usable.
#ifndef COALESCE_BATCHING_SCHEDULER_OPTIONS_H_
#define COALESCE_BATCHING_SCHEDULER_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "batching/clock.h"
#include "engine/tensor_spec.h"

namespace coalesce {

struct QueuePolicy {
  enum class TimeoutAction { kReject, kDelay };
  // What happens to a request whose queue timeout passes: kReject answers it
  // Unavailable; kDelay moves it behind the level's non-delayed requests.
  TimeoutAction timeout_action = TimeoutAction::kReject;
  Clock::Duration default_timeout{0};   // 0 = no queue timeout.
  bool allow_timeout_override = false;  // Request `timeout` may only shorten.
  uint32_t max_queue_size = 0;          // Per level; 0 = unbounded.
};

struct SchedulerOptions {
  std::string model_name;
  // 0: the model has no batch dimension and requests never merge.
  int max_batch_size = 0;
  // false: every request is executed as its own batch.
  bool dynamic_batching = false;
  // Each in [1, max_batch_size].
  std::vector<int> preferred_batch_sizes;
  // How long the oldest request of a forming batch may wait for company.
  Clock::Duration max_queue_delay{0};
  // > 0: the p99 latency the batcher aims for (latency_target_policy.h); it
  // then chooses the batch and the wait itself, and preferred_batch_sizes
  // and max_queue_delay are not used. REQUIRES max_batch_size > 0 and
  // dynamic_batching when set.
  Clock::Duration latency_target{0};
  // 0 = one level; else levels 1..priority_levels, 1 highest.
  uint32_t priority_levels = 0;
  // REQUIRES: in [1, priority_levels] when priority_levels > 0.
  uint32_t default_priority_level = 0;
  QueuePolicy default_queue_policy;
  // Overrides per level; keys in [1, priority_levels].
  std::map<uint32_t, QueuePolicy> priority_queue_policy;
  // Config dims (batch dim excluded when max_batch_size > 0), in the
  // executor's input order. At least one. BYTES tensors travel serialized
  // (engine/serialized_bytes.h).
  std::vector<TensorSpec> inputs;
  // In the executor's output order. At least one.
  std::vector<TensorSpec> outputs;
  Clock* clock = RealClock();  // Not owned; must outlive the batcher.
};

// OK when `options` can configure a DynamicBatcher; InvalidArgument naming
// the offending field otherwise.
absl::Status ValidateSchedulerOptions(const SchedulerOptions& options);

}  // namespace coalesce

#endif  // COALESCE_BATCHING_SCHEDULER_OPTIONS_H_
