#include "server/served_model.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/executor_factory.h"
#include "server/executor_options_from_config.h"
#include "server/instance_placement.h"
#include "server/model_config_completion.h"
#include "server/model_warmup.h"
#include "server/reshape_instance.h"
#include "server/resource_limits.h"
#include "server/scheduler_options_from_config.h"
#include "server/sequence_config.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

// Config settings that are accepted but have no effect here, said once per
// load so that nobody believes they took effect.
void WarnIgnoredSettings(const inference::ModelConfig& config) {
  auto warn = [&config](const char* what) {
    spdlog::warn("model '{}': {} is ignored by this server", config.name(),
                 what);
  };
  if (config.optimization().has_execution_accelerators()) {
    warn("optimization.execution_accelerators");
  }
  if (config.response_cache().enable()) warn("response_cache");
  if (config.has_dynamic_batching() &&
      config.dynamic_batching().preserve_ordering()) {
    warn("dynamic_batching.preserve_ordering");
  }
  for (const auto& group : config.instance_group()) {
    if (group.has_rate_limiter()) warn("instance_group.rate_limiter");
  }
}

}  // namespace

namespace {

// The reshapes of `config`, in the model's input and output order.
ReshapePlan ReshapePlanOf(const inference::ModelConfig& config,
                          const ModelSignature& signature) {
  ReshapePlan plan;
  plan.batching = config.max_batch_size() > 0;
  auto collect = [](const std::vector<TensorSpec>& specs, const auto& tensors,
                    std::vector<std::optional<TensorReshape>>& out) {
    for (const TensorSpec& spec : specs) {
      std::optional<TensorReshape> r;
      for (const auto& t : tensors) {
        if (t.name() != spec.name || !t.has_reshape()) continue;
        r = TensorReshape{
            Shape(t.dims().begin(), t.dims().end()),
            Shape(t.reshape().shape().begin(), t.reshape().shape().end())};
      }
      out.push_back(std::move(r));
    }
  };
  collect(signature.inputs, config.input(), plan.inputs);
  collect(signature.outputs, config.output(), plan.outputs);
  return plan;
}

// The CPU engine's rewrites, unless an instance group may run on a GPU
// (KIND_GPU, or KIND_AUTO before it is resolved): then the device's, whose
// layout is the config's gpu_layout (the CPU runs either layout, so a
// KIND_AUTO model that falls back to the CPU serves the same graph). A
// model without instance groups runs on the CPU
// (model_config_completion.h).
// With the token_packing parameter, the model's packed form too.
absl::StatusOr<ModelOptions> ModelOptionsFor(
    const inference::ModelConfig& config) {
  absl::StatusOr<bool> packing = TokenPackingFromConfig(config);
  if (!packing.ok()) return packing.status();
  ModelOptions options;
  for (const auto& group : config.instance_group()) {
    if (group.kind() == inference::ModelInstanceGroup::KIND_CPU) continue;
    absl::StatusOr<bool> channels_last = GpuChannelsLastFromConfig(config);
    if (!channels_last.ok()) return channels_last.status();
    options = ModelOptions::ForDevice(*channels_last);
    break;
  }
  options.token_packing = *packing;
  return options;
}

// What the token_packing parameter made of the model.
void LogTokenPacking(const inference::ModelConfig& config, const Model& model) {
  if (model.packed() == nullptr) {
    spdlog::warn("model '{}': {}; every batch runs padded", config.name(),
                 model.packing_refusal());
    return;
  }
  const TokenPacking& p = model.packing();
  spdlog::info(
      "model '{}': token packing on padding mask '{}': {} nodes run on the "
      "real tokens of a padded batch ({} values packed, {} unpacked); {}",
      config.name(), model.signature().inputs[p.mask_input].name,
      p.region_nodes, p.packs, p.unpacks,
      p.pads_with_zero_rows
          ? "a GPU pads its batches to graph sizes with rows of zeros"
          : "rows of zeros change its other rows, so a GPU does not pad its "
            "batches to graph sizes");
}

}  // namespace

absl::StatusOr<std::shared_ptr<ServedModel>> LoadServedModel(
    const std::filesystem::path& model_dir, int64_t version,
    inference::ModelConfig config, Clock* clock) {
  if (absl::Status s = CheckBackendSupported(config); !s.ok()) return s;
  ApplyInstanceDefaults(&config, UsableGpu);
  const std::string filename = config.default_model_filename().empty()
                                   ? "model.onnx"
                                   : config.default_model_filename();
  const auto path = model_dir / std::to_string(version) / filename;
  absl::StatusOr<ModelOptions> options = ModelOptionsFor(config);
  if (!options.ok()) return options.status();
  using Seconds = std::chrono::duration<double>;
  const auto start = std::chrono::steady_clock::now();
  auto model = Model::LoadFromFile(path.string(), *options);
  const Seconds parse = std::chrono::steady_clock::now() - start;
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("version ", version, " (", filename,
                                     "): ", model.status().message()));
  }
  if (absl::Status s = CompleteModelConfig((*model)->signature(), &config);
      !s.ok()) {
    return s;
  }
  if (options->token_packing) LogTokenPacking(config, **model);
  if (absl::Status s = CheckTensorSizes(config, MemoryLimitBytes()); !s.ok()) {
    return s;
  }
  WarnIgnoredSettings(config);
  auto labels = ReadOutputLabels(model_dir, config);
  if (!labels.ok()) return labels.status();
  auto tuning = ModelTuningCache::Open(model_dir / std::to_string(version),
                                       config.name());
  absl::StatusOr<Clock::Duration> target = LatencyTargetFromConfig(config);
  if (!target.ok()) return target.status();
  if (*target > Clock::Duration::zero() &&
      (config.dynamic_batching().max_queue_delay_microseconds() > 0 ||
       config.dynamic_batching().preferred_batch_size_size() > 0)) {
    spdlog::warn(
        "model '{}': latency_target_p99_ms is set, so the batcher chooses "
        "its own wait and batch sizes; max_queue_delay_microseconds and "
        "preferred_batch_size are not used",
        config.name());
  }
  auto warmup =
      WarmupBatchesFromConfig(config, (*model)->signature(), model_dir);
  if (!warmup.ok()) return warmup.status();
  const auto instances_start = std::chrono::steady_clock::now();
  auto instances = CreateExecutorInstances(*model, &config,
                                           {.tuning_cache = tuning->cache()});
  if (!instances.ok()) return instances.status();
  const ReshapePlan reshape = ReshapePlanOf(config, (*model)->signature());
  for (auto& instance : *instances) {
    instance = WithReshape(std::move(instance), reshape);
  }
  const Seconds create = std::chrono::steady_clock::now() - instances_start;
  // Before the batcher exists, so before the model can be ready.
  absl::StatusOr<WarmupReport> warmed =
      WarmUpInstances(config, (*model)->signature(), *warmup, *instances);
  if (!warmed.ok()) return warmed.status();
  spdlog::info(
      "model '{}' version {}: parse and optimize {:.3f} s, {} instance(s) "
      "created in {:.3f} s, warm-up {:.3f} s ({} batch(es) run; {} "
      "model_warmup sample(s))",
      config.name(), version, parse.count(), instances->size(), create.count(),
      warmed->seconds, warmed->batches, warmup->size());
  SchedulerOptions scheduler =
      SchedulerOptionsFromConfig(config, (*model)->signature(), clock);
  std::optional<SequenceOptions> sequence;
  if (config.has_sequence_batching()) {
    auto options = SequenceOptionsFromConfig(config, model_dir);
    if (!options.ok()) return options.status();
    sequence = *std::move(options);
    if (absl::Status s =
            AddSequenceTensors(config, (*model)->signature(), &scheduler);
        !s.ok()) {
      return s;
    }
  }
  auto batcher = DynamicBatcher::Create(scheduler, *std::move(instances));
  if (!batcher.ok()) return batcher.status();
  std::unique_ptr<SequenceBatcher> sequencer;
  if (sequence.has_value()) {
    auto created =
        SequenceBatcher::Create(*sequence, scheduler, batcher->get());
    if (!created.ok()) return created.status();
    sequencer = *std::move(created);
  }
  auto served = std::make_shared<ServedModel>();
  served->sequencer = std::move(sequencer);
  served->name = config.name();
  served->version = version;
  served->config = std::move(config);
  served->model = *std::move(model);
  served->batcher = *std::move(batcher);
  served->labels = std::make_shared<const OutputLabels>(*std::move(labels));
  served->tuning = std::move(tuning);
  return served;
}

absl::Status ServedModel::Enqueue(
    std::unique_ptr<InferenceRequest>* request) const {
  if (sequencer != nullptr) return sequencer->Enqueue(request);
  return batcher->Enqueue(request);
}

void ServedModel::Shutdown() const {
  if (sequencer != nullptr) sequencer->Shutdown();
  batcher->Shutdown();
  if (tuning != nullptr) tuning->SaveIfChanged();
}

}  // namespace coalesce
