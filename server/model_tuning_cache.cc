#include "server/model_tuning_cache.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace coalesce {

std::shared_ptr<ModelTuningCache> ModelTuningCache::Open(
    const std::filesystem::path& version_dir, const std::string& model_name) {
  std::shared_ptr<ModelTuningCache> opened(
      new ModelTuningCache(version_dir / kTuningCacheFileName, model_name));
  absl::Status loaded = opened->cache_->Load(opened->path_.string());
  if (loaded.ok()) {
    spdlog::info("model '{}': {} tuning choice(s) from {}", model_name,
                 opened->cache_->size(), opened->path_.string());
  } else if (!absl::IsNotFound(loaded)) {
    spdlog::warn("model '{}': ignoring the tuning cache: {}", model_name,
                 std::string(loaded.message()));
  }
  return opened;
}

void ModelTuningCache::SaveIfChanged() {
  if (!cache_->changed()) return;
  absl::Status saved = cache_->Save(path_.string());
  if (saved.ok()) {
    spdlog::info("model '{}': {} tuning choice(s) saved to {}", model_name_,
                 cache_->size(), path_.string());
  } else {
    spdlog::warn("model '{}': tuning cache not saved: {}", model_name_,
                 std::string(saved.message()));
  }
}

}  // namespace coalesce
