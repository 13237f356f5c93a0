#include "server/scheduler_options_from_config.h"

#include <chrono>
#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

QueuePolicy ToQueuePolicy(const inference::ModelQueuePolicy& proto) {
  QueuePolicy policy;
  policy.timeout_action =
      proto.timeout_action() == inference::ModelQueuePolicy::DELAY
          ? QueuePolicy::TimeoutAction::kDelay
          : QueuePolicy::TimeoutAction::kReject;
  policy.default_timeout =
      std::chrono::microseconds(proto.default_timeout_microseconds());
  policy.allow_timeout_override = proto.allow_timeout_override();
  policy.max_queue_size = proto.max_queue_size();
  return policy;
}

template <typename TensorConfig>
std::vector<TensorSpec> InSignatureOrder(
    const std::vector<TensorSpec>& signature,
    const google::protobuf::RepeatedPtrField<TensorConfig>& tensors) {
  std::vector<TensorSpec> specs;
  for (const TensorSpec& model_spec : signature) {
    for (const TensorConfig& t : tensors) {
      if (t.name() != model_spec.name) continue;
      specs.push_back(TensorSpec{t.name(), static_cast<DataType>(t.data_type()),
                                 Shape(t.dims().begin(), t.dims().end())});
    }
  }
  return specs;
}

constexpr char kLatencyTarget[] = "latency_target_p99_ms";

}  // namespace

absl::StatusOr<Clock::Duration> LatencyTargetFromConfig(
    const inference::ModelConfig& config) {
  auto it = config.parameters().find(kLatencyTarget);
  if (it == config.parameters().end()) return Clock::Duration(0);
  const std::string& text = it->second.string_value();
  auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", config.name(), "': parameter '", kLatencyTarget,
                     "' (\"", text, "\"): ", why));
  };
  double ms = 0;
  if (!absl::SimpleAtod(text, &ms) || !std::isfinite(ms) || ms <= 0) {
    return fail("must be a positive number of milliseconds");
  }
  if (config.max_batch_size() < 1) {
    return fail("needs max_batch_size >= 1: the target chooses batch sizes");
  }
  if (config.has_sequence_batching()) {
    return fail("is not supported with sequence_batching");
  }
  if (!config.has_dynamic_batching()) {
    return fail("needs dynamic_batching { } in the config");
  }
  return std::chrono::duration_cast<Clock::Duration>(
      std::chrono::duration<double, std::milli>(ms));
}

SchedulerOptions SchedulerOptionsFromConfig(
    const inference::ModelConfig& config, const ModelSignature& signature,
    Clock* clock) {
  SchedulerOptions options;
  options.model_name = config.name();
  options.max_batch_size = config.max_batch_size();
  options.inputs = InSignatureOrder(signature.inputs, config.input());
  options.outputs = InSignatureOrder(signature.outputs, config.output());
  options.clock = clock;
  if (!config.has_dynamic_batching()) return options;
  const auto& db = config.dynamic_batching();
  options.dynamic_batching = true;
  options.latency_target =
      LatencyTargetFromConfig(config).value_or(Clock::Duration(0));
  options.preferred_batch_sizes.assign(db.preferred_batch_size().begin(),
                                       db.preferred_batch_size().end());
  options.max_queue_delay =
      std::chrono::microseconds(db.max_queue_delay_microseconds());
  options.priority_levels = static_cast<uint32_t>(db.priority_levels());
  options.default_priority_level =
      static_cast<uint32_t>(db.default_priority_level());
  options.default_queue_policy = ToQueuePolicy(db.default_queue_policy());
  for (const auto& [level, policy] : db.priority_queue_policy()) {
    options.priority_queue_policy[static_cast<uint32_t>(level)] =
        ToQueuePolicy(policy);
  }
  return options;
}

}  // namespace coalesce
