#include "batching/scheduler_options.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

absl::Status ValidateTensors(const std::vector<TensorSpec>& tensors,
                             const char* kind) {
  if (tensors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no ", kind, "s"));
  }
  std::set<std::string> names;
  for (const TensorSpec& t : tensors) {
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("duplicate ", kind, " '", t.name, "'"));
    }
    if (t.dtype != DataType::kBytes && ElementByteSize(t.dtype) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind, " '", t.name, "' has an invalid datatype"));
    }
    for (int64_t d : t.dims) {
      if (d < -1) {
        return absl::InvalidArgumentError(absl::StrCat(
            kind, " '", t.name, "' has bad dims ", ShapeToString(t.dims)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateBatching(const SchedulerOptions& o) {
  if (o.max_batch_size < 0) {
    return absl::InvalidArgumentError("max_batch_size must be >= 0");
  }
  for (int size : o.preferred_batch_sizes) {
    if (size < 1 || size > o.max_batch_size) {
      return absl::InvalidArgumentError(absl::StrCat("preferred_batch_size ",
                                                     size, " is outside [1, ",
                                                     o.max_batch_size, "]"));
    }
  }
  if (o.max_queue_delay < Clock::Duration::zero()) {
    return absl::InvalidArgumentError("max_queue_delay must be >= 0");
  }
  if (o.latency_target < Clock::Duration::zero()) {
    return absl::InvalidArgumentError("latency_target must be >= 0");
  }
  if (o.latency_target > Clock::Duration::zero() &&
      (o.max_batch_size < 1 || !o.dynamic_batching)) {
    return absl::InvalidArgumentError(
        "a latency target needs max_batch_size >= 1 and dynamic batching");
  }
  return absl::OkStatus();
}

absl::Status ValidatePolicy(const QueuePolicy& policy, uint32_t level) {
  if (policy.default_timeout < Clock::Duration::zero()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "queue policy of priority level ", level, ": negative timeout"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePriorities(const SchedulerOptions& o) {
  const uint32_t n = o.priority_levels;
  if (n > 0 && (o.default_priority_level < 1 || o.default_priority_level > n)) {
    return absl::InvalidArgumentError(absl::StrCat("default_priority_level ",
                                                   o.default_priority_level,
                                                   " is outside [1, ", n, "]"));
  }
  if (absl::Status s = ValidatePolicy(o.default_queue_policy, 0); !s.ok()) {
    return s;
  }
  for (const auto& [level, policy] : o.priority_queue_policy) {
    if (level < 1 || level > n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "priority_queue_policy level ", level, " is outside [1, ", n, "]"));
    }
    if (absl::Status s = ValidatePolicy(policy, level); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateSchedulerOptions(const SchedulerOptions& options) {
  if (options.clock == nullptr) {
    return absl::InvalidArgumentError("clock must not be null");
  }
  if (absl::Status s = ValidateBatching(options); !s.ok()) return s;
  if (absl::Status s = ValidatePriorities(options); !s.ok()) return s;
  if (absl::Status s = ValidateTensors(options.inputs, "input"); !s.ok()) {
    return s;
  }
  return ValidateTensors(options.outputs, "output");
}

}  // namespace coalesce
