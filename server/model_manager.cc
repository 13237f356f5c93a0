#include "server/model_manager.h"

#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/model_config_io.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

// A temporary model directory holding override files, removed with it.
class OverrideDirectory {
 public:
  static absl::StatusOr<std::unique_ptr<OverrideDirectory>> Write(
      const std::string& name,
      const std::map<std::string, std::string>& files) {
    char pattern[] = "/tmp/coalesce-override-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      return absl::InternalError(
          "cannot create a directory for override files");
    }
    auto dir =
        std::unique_ptr<OverrideDirectory>(new OverrideDirectory(pattern));
    for (const auto& [relative, contents] : files) {
      const fs::path path = fs::path(relative).lexically_normal();
      if (relative.empty() || path.is_absolute() || path.empty() ||
          *path.begin() == "..") {
        return absl::InvalidArgumentError(absl::StrCat(
            "override file 'file:", relative,
            "' must be a relative path inside the model directory"));
      }
      const fs::path target = dir->root_ / name / path;
      std::error_code ec;
      fs::create_directories(target.parent_path(), ec);
      std::ofstream out(target, std::ios::binary);
      out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
      if (ec || !out) {
        return absl::InternalError(
            absl::StrCat("cannot write override file 'file:", relative, "'"));
      }
    }
    return dir;
  }
  ~OverrideDirectory() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path model_dir(const std::string& name) const { return root_ / name; }

 private:
  explicit OverrideDirectory(fs::path root) : root_(std::move(root)) {}
  const fs::path root_;
};

// Shuts the batchers down side by side, so that each queue is flushed at once
// rather than after the previous model's drain; returns when all are drained.
void ShutdownEach(const std::vector<std::shared_ptr<ServedModel>>& models) {
  std::vector<std::thread> drains;
  for (const auto& m : models) {
    drains.emplace_back([m] { m->Shutdown(); });
  }
  for (auto& t : drains) t.join();
}

absl::StatusOr<std::map<int64_t, std::shared_ptr<ServedModel>>> LoadVersions(
    const fs::path& dir, const std::string& name, Clock* clock,
    const std::optional<inference::ModelConfig>& override_config) {
  absl::StatusOr<inference::ModelConfig> config =
      override_config ? *override_config : ReadModelConfig(dir, name);
  if (!config.ok()) return config.status();
  if (config->name().empty()) config->set_name(name);
  if (config->name() != name) {
    return absl::InvalidArgumentError(
        absl::StrCat("the config override names the model '", config->name(),
                     "', not '", name, "'"));
  }
  const auto versions =
      SelectVersions(config->version_policy(), ListVersionFolders(dir));
  if (versions.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "model '", name, "' has no version folder selected by its policy"));
  }
  std::map<int64_t, std::shared_ptr<ServedModel>> served;
  for (int64_t version : versions) {
    auto model = LoadServedModel(dir, version, *config, clock);
    if (!model.ok()) {
      std::vector<std::shared_ptr<ServedModel>> loaded;
      for (auto& [v, m] : served) loaded.push_back(m);
      ShutdownEach(loaded);
      return model.status();
    }
    served[version] = *std::move(model);
  }
  return served;
}

}  // namespace

ModelManager::ModelManager(std::string repository, Clock* clock)
    : repository_(std::move(repository)), clock_(clock) {}

ModelManager::~ModelManager() { ShutdownAll(); }

void ModelManager::Record(const std::string& name, ModelRecord record,
                          std::vector<std::shared_ptr<ServedModel>>* replaced) {
  absl::MutexLock lock(&mu_);
  ModelRecord& slot = models_[name];
  for (auto& [v, m] : slot.served) replaced->push_back(m);
  slot = std::move(record);
}

bool ModelManager::IsRepositoryModel(const std::string& name) const {
  auto names = ListModelFolders(repository_);
  return names.ok() &&
         std::find(names->begin(), names->end(), name) != names->end();
}

absl::StatusOr<std::map<int64_t, std::shared_ptr<ServedModel>>>
ModelManager::LoadWithOverrides(const std::string& name,
                                const LoadOverrides& overrides) {
  if (overrides.files.empty()) {
    return LoadVersions(fs::path(repository_) / name, name, clock_,
                        overrides.config);
  }
  // Files replace the model directory: everything comes from them.
  auto dir = OverrideDirectory::Write(name, overrides.files);
  if (!dir.ok()) return dir.status();
  return LoadVersions((*dir)->model_dir(name), name, clock_, overrides.config);
}

absl::Status ModelManager::Load(const std::string& name,
                                const LoadOverrides& overrides) {
  absl::MutexLock load_lock(&load_mu_);
  if (overrides.files.empty() && !IsRepositoryModel(name)) {
    return absl::NotFoundError(
        absl::StrCat("model '", name, "' is not in the repository"));
  }
  if (name.empty() || name.find('/') != std::string::npos || name == "." ||
      name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not a model name"));
  }
  auto loaded = LoadWithOverrides(name, overrides);
  if (!loaded.ok()) return RecordFailure(name, loaded.status());
  ModelRecord record;
  record.served = *std::move(loaded);
  record.state = ModelState::kReady;
  spdlog::info("model '{}' loaded ({} version(s))", name, record.served.size());
  std::vector<std::shared_ptr<ServedModel>> replaced;
  Record(name, std::move(record), &replaced);
  ShutdownEach(replaced);
  return absl::OkStatus();
}

absl::Status ModelManager::RecordFailure(const std::string& name,
                                         const absl::Status& status) {
  const std::string reason(status.message());
  {
    absl::MutexLock lock(&mu_);
    auto it = models_.find(name);
    if (it != models_.end() && !it->second.served.empty()) {
      // A failed reload leaves the loaded versions serving, as in Triton.
      spdlog::error(
          "model '{}' failed to reload, previous version(s) keep "
          "serving: {}",
          name, reason);
      return status;
    }
    models_[name] = ModelRecord{{}, ModelState::kUnavailable, reason};
  }
  spdlog::error("model '{}' failed to load: {}", name, reason);
  return status;
}

absl::Status ModelManager::LoadAll() {
  auto names = ListModelFolders(repository_);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) Load(name).IgnoreError();
  return absl::OkStatus();
}

absl::Status ModelManager::Unload(const std::string& name) {
  absl::MutexLock load_lock(&load_mu_);
  std::vector<std::shared_ptr<ServedModel>> replaced;
  {
    absl::MutexLock lock(&mu_);
    auto it = models_.find(name);
    if (it == models_.end() || it->second.state != ModelState::kReady) {
      return absl::NotFoundError(
          absl::StrCat("model '", name, "' is not loaded"));
    }
  }
  Record(name, ModelRecord{{}, ModelState::kUnavailable, "unloaded"},
         &replaced);
  ShutdownEach(replaced);
  spdlog::info("model '{}' unloaded", name);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<ServedModel>> ModelManager::Find(
    const std::string& name, const std::string& version) const {
  absl::MutexLock lock(&mu_);
  auto it = models_.find(name);
  // Worded as Triton words it: its clients and examples look for
  // "Request for unknown model".
  if (it == models_.end()) {
    return absl::NotFoundError(
        absl::StrCat("Request for unknown model: '", name, "' is not found"));
  }
  if (it->second.served.empty()) {
    std::string why =
        it->second.reason.empty() ? "" : absl::StrCat(": ", it->second.reason);
    return absl::NotFoundError(absl::StrCat("Request for unknown model: '",
                                            name, "' has no available versions",
                                            why));
  }
  const auto& served = it->second.served;
  if (version.empty()) return served.rbegin()->second;
  int64_t v = 0;
  auto [end, ec] =
      std::from_chars(version.data(), version.data() + version.size(), v);
  auto found = served.end();
  if (ec == std::errc() && end == version.data() + version.size()) {
    found = served.find(v);
  }
  if (found == served.end()) {
    return absl::NotFoundError(absl::StrCat("Request for unknown model: '",
                                            name, "' version ", version,
                                            " is not found"));
  }
  return found->second;
}

absl::StatusOr<std::vector<std::shared_ptr<ServedModel>>> ModelManager::Served(
    const std::string& name) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<ServedModel>> out;
  for (const auto& [model_name, record] : models_) {
    if (!name.empty() && model_name != name) continue;
    for (const auto& [v, m] : record.served) out.push_back(m);
  }
  if (!name.empty() && out.empty()) {
    return absl::NotFoundError(
        absl::StrCat("Request for unknown model: '", name, "' is not found"));
  }
  return out;
}

std::string_view ModelStateName(ModelState state) {
  switch (state) {
    case ModelState::kReady:
      return "READY";
    case ModelState::kUnavailable:
      return "UNAVAILABLE";
    case ModelState::kNeverLoaded:
      break;
  }
  return "";
}

std::vector<ModelIndexEntry> ModelManager::Index(bool ready_only) const {
  auto names = ListModelFolders(repository_);
  absl::MutexLock lock(&mu_);
  std::map<std::string, const ModelRecord*> all;
  if (names.ok()) {
    for (const auto& n : *names) all[n] = nullptr;
  }
  for (const auto& [n, record] : models_) all[n] = &record;
  std::vector<ModelIndexEntry> entries;
  for (const auto& [n, record] : all) {
    if (record != nullptr && !record->served.empty()) {
      for (const auto& [v, m] : record->served) {
        entries.push_back({n, std::to_string(v), ModelState::kReady, ""});
      }
    } else if (!ready_only) {
      entries.push_back({n, "",
                         record ? record->state : ModelState::kNeverLoaded,
                         record ? record->reason : ""});
    }
  }
  return entries;
}

void ModelManager::ShutdownAll() {
  std::vector<std::shared_ptr<ServedModel>> all;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [n, record] : models_) {
      for (const auto& [v, m] : record.served) all.push_back(m);
    }
  }
  ShutdownEach(all);
}

std::vector<std::string> ModelManager::Unfinished() const {
  std::vector<std::string> lines;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, record] : models_) {
    for (const auto& [version, model] : record.served) {
      const int batches = model->batcher->InFlightBatches();
      const int64_t queued = model->batcher->QueuedRequests();
      if (batches == 0 && queued == 0) continue;
      lines.push_back(absl::StrCat(
          "'", name, "' version ", version, ": ", batches,
          batches == 1 ? " batch" : " batches", " in flight, ", queued,
          queued == 1 ? " request" : " requests", " queued"));
    }
  }
  return lines;
}

std::vector<std::string> ModelManager::Unhealthy() const {
  std::vector<std::string> lines;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, record] : models_) {
    for (const auto& [version, model] : record.served) {
      absl::Status health = model->batcher->Health();
      if (!health.ok()) {
        lines.push_back(absl::StrCat("'", name, "' version ", version, ": ",
                                     health.message()));
      }
    }
  }
  return lines;
}

}  // namespace coalesce
