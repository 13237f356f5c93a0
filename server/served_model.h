// ServedModel: one version of one model, loaded and serving: its completed
// config, the engine's parsed model and the batcher that feeds its instances.
//
// Shared (std::shared_ptr) between the ModelManager and the RPCs using it;
// the config and model are immutable, and the batcher is thread-safe. An
// unloaded version is shut down (its queue drained) by the manager before its
// last reference goes away.
#ifndef COALESCE_SERVER_SERVED_MODEL_H_
#define COALESCE_SERVER_SERVED_MODEL_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "batching/clock.h"
#include "batching/dynamic_batcher.h"
#include "batching/sequence_batcher.h"
#include "engine/model.h"
#include "proto/model_config.pb.h"
#include "server/classification.h"
#include "server/model_tuning_cache.h"

namespace coalesce {

struct ServedModel {
  std::string name;
  int64_t version = 0;
  inference::ModelConfig config;  // completed from the model
  std::shared_ptr<const Model> model;
  std::unique_ptr<DynamicBatcher> batcher;
  // With sequence_batching: requests go through it to `batcher`. Declared
  // after `batcher`, so destroyed before it.
  std::unique_ptr<SequenceBatcher> sequencer;
  // Labels of the outputs with a label_filename (classification.h).
  std::shared_ptr<const OutputLabels> labels;
  // The GPU instances' measured algorithm choices, saved beside the model
  // at Shutdown.
  std::shared_ptr<ModelTuningCache> tuning;

  // Hands a request to the sequencer when there is one, else the batcher
  // (their Enqueue contracts).
  absl::Status Enqueue(std::unique_ptr<InferenceRequest>* request) const;
  // Drains the sequencer (if any), then the batcher; then saves what the
  // instances measured (model_tuning_cache.h).
  void Shutdown() const;
};

// Loads <model_dir>/<version>/<default_model_filename or model.onnx>,
// completes `config` from it, creates its executor instances
// (executor_factory.h: CPU or GPU, by instance_group) and the
// batcher. InvalidArgument / NotFound with the reason when any step fails.
absl::StatusOr<std::shared_ptr<ServedModel>> LoadServedModel(
    const std::filesystem::path& model_dir, int64_t version,
    inference::ModelConfig config, Clock* clock);

}  // namespace coalesce

#endif  // COALESCE_SERVER_SERVED_MODEL_H_
