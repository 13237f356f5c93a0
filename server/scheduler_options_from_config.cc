#include "server/scheduler_options_from_config.h"

#include <chrono>

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

}  // namespace

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
