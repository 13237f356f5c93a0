// ModelManager: which models of the repository are loaded, in what state,
// and why not. Loads, reloads and unloads models; finds the ServedModel a
// request is for.
//
// A model that fails to load (bad config, unparsable or unsupported ONNX) is
// recorded UNAVAILABLE with its reason and logged; the others keep serving.
// Thread-safe. Loading runs outside the state lock, one load at a time.
#ifndef COALESCE_SERVER_MODEL_MANAGER_H_
#define COALESCE_SERVER_MODEL_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "batching/clock.h"
#include "server/served_model.h"

namespace coalesce {

// What RepositoryModelLoad may give instead of the repository's files: a
// config (replacing config.pbtxt) and files of the model directory
// (relative path -> contents, e.g. "1/model.onnx"). With files the model is
// loaded from them alone, and need not be in the repository.
struct LoadOverrides {
  std::optional<inference::ModelConfig> config;
  std::map<std::string, std::string> files;
};

// A model's state in the repository index (Triton's names: READY,
// UNAVAILABLE; a folder never loaded has none).
enum class ModelState { kNeverLoaded, kReady, kUnavailable };

// "READY", "UNAVAILABLE", or "" for kNeverLoaded (the protocol's string).
std::string_view ModelStateName(ModelState state);

// One row of RepositoryIndex.
struct ModelIndexEntry {
  std::string name;
  std::string version;  // empty when the failure is not tied to a version
  ModelState state = ModelState::kNeverLoaded;
  std::string reason;
};

class ModelManager {
 public:
  // REQUIRES: clock outlives the manager.
  ModelManager(std::string repository, Clock* clock);
  ~ModelManager();  // ShutdownAll()

  // (Re)loads every version the model's version policy selects; a reload
  // swaps the new versions in, then drains the old ones. When loading fails,
  // the error (with reason) is returned and logged; versions already serving
  // keep serving, otherwise the model is recorded UNAVAILABLE with the reason.
  // NotFound unless `name` is a model folder of the repository or
  // `overrides` carries files; InvalidArgument for an override file path that
  // is absolute or leaves the model directory.
  absl::Status Load(const std::string& name,
                    const LoadOverrides& overrides = {});

  // Loads every model folder of the repository; failures are recorded and
  // logged, not returned. Fails only when the repository cannot be read.
  absl::Status LoadAll();

  // Stops accepting requests for the model, drains its queues, and forgets
  // it. NotFound when it is not loaded.
  absl::Status Unload(const std::string& name);

  // The served version: `version` empty means the latest ready one.
  // NotFound naming the model (and version) otherwise.
  absl::StatusOr<std::shared_ptr<ServedModel>> Find(
      const std::string& name, const std::string& version) const;

  // Every served version of `name` (all models when empty), by name then
  // version. NotFound when a named model is not served.
  absl::StatusOr<std::vector<std::shared_ptr<ServedModel>>> Served(
      const std::string& name) const;

  // Every model folder of the repository with its state; with `ready_only`
  // only READY versions.
  std::vector<ModelIndexEntry> Index(bool ready_only) const;

  // Drains and shuts down every served model. Idempotent.
  void ShutdownAll();

  // One line per served model version that still has queued requests or
  // batches in flight ("'resnet' version 1: 1 batch in flight, 3 requests
  // queued"); empty when every model is drained. Thread-safe, also while
  // ShutdownAll runs: it is what a shutdown that gave up abandons.
  std::vector<std::string> Unfinished() const;

  // One line per served model version with no healthy instance left
  // ("'resnet' version 1: model 'resnet' has no healthy instance: instance
  // 0: ..."); empty when every model can serve. Thread-safe.
  std::vector<std::string> Unhealthy() const;

 private:
  struct ModelRecord {
    std::map<int64_t, std::shared_ptr<ServedModel>> served;
    ModelState state = ModelState::kNeverLoaded;
    std::string reason;  // why UNAVAILABLE
  };

  bool IsRepositoryModel(const std::string& name) const;
  absl::StatusOr<std::map<int64_t, std::shared_ptr<ServedModel>>>
  LoadWithOverrides(const std::string& name, const LoadOverrides& overrides);
  absl::Status RecordFailure(const std::string& name,
                             const absl::Status& status);
  void Record(const std::string& name, ModelRecord record,
              std::vector<std::shared_ptr<ServedModel>>* replaced);

  const std::string repository_;
  Clock* const clock_;
  absl::Mutex load_mu_;  // serializes Load/Unload; taken before mu_
  mutable absl::Mutex mu_;
  std::map<std::string, ModelRecord> models_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_MODEL_MANAGER_H_
