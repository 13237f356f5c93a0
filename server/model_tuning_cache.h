// ModelTuningCache: the tuning cache (engine/device/tuning_cache.h) of one
// served model version, kept beside its model file as
// <model_dir>/<version>/coalesce.tuning, so that a restart of the server
// reuses the algorithm choices its GPU instances measured instead of timing
// them again, the way TensorRT keeps a timing cache. Entries are keyed by
// the GPU, library versions and shapes, so one file serves a repository
// shared by different GPUs.
//
// The repository poller ignores this file (repository_poller.cc): it
// changes as the server measures, which is not a change of the model.
// Thread-safe (the cache is; Save is serialized by it).
#ifndef COALESCE_SERVER_MODEL_TUNING_CACHE_H_
#define COALESCE_SERVER_MODEL_TUNING_CACHE_H_

#include <filesystem>
#include <memory>
#include <string>

#include "engine/device/tuning_cache.h"

namespace coalesce {

inline constexpr char kTuningCacheFileName[] = "coalesce.tuning";

class ModelTuningCache {
 public:
  // Loads <version_dir>/coalesce.tuning when there is one. A missing file
  // is a first start; an unreadable or malformed one is logged and left
  // out (a cache only saves time, it never stops a model from loading).
  static std::shared_ptr<ModelTuningCache> Open(
      const std::filesystem::path& version_dir, const std::string& model_name);

  const std::shared_ptr<TuningCache>& cache() const { return cache_; }

  // Writes the file when the cache holds entries it lacks. A failure (a
  // read-only repository) is logged; the choices still serve from memory.
  void SaveIfChanged();

 private:
  ModelTuningCache(std::filesystem::path path, std::string model_name)
      : path_(std::move(path)), model_name_(std::move(model_name)) {}

  const std::filesystem::path path_;
  const std::string model_name_;
  const std::shared_ptr<TuningCache> cache_ = std::make_shared<TuningCache>();
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_MODEL_TUNING_CACHE_H_
