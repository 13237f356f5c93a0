#include "server/repository_poller.h"

#include <filesystem>
#include <functional>
#include <utility>

#include "server/model_config_io.h"
#include "server/model_tuning_cache.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

// The server's own tuning cache (model_tuning_cache.h) and its temporary
// files change as it measures; they are not a change of the model.
bool IsTuningCache(const fs::path& file) {
  return file.filename().string().rfind(kTuningCacheFileName, 0) == 0;
}

// Order-independent within a folder would hide renames; the iteration order
// is made stable by sorting the entries first.
uint64_t Fingerprint(const fs::path& dir) {
  std::map<std::string, std::pair<uintmax_t, int64_t>> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it.depth() > 8) {
      it.disable_recursion_pending();
      continue;
    }
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec) || IsTuningCache(it->path())) continue;
    const uintmax_t size = it->file_size(file_ec);
    const auto mtime = it->last_write_time(file_ec);
    files[fs::relative(it->path(), dir, file_ec).string()] = {
        size, static_cast<int64_t>(mtime.time_since_epoch().count())};
  }
  uint64_t hash = 1469598103934665603ULL;
  auto mix = [&hash](uint64_t v) { hash = (hash ^ v) * 1099511628211ULL; };
  for (const auto& [path, stat] : files) {
    mix(std::hash<std::string>{}(path));
    mix(stat.first);
    mix(static_cast<uint64_t>(stat.second));
  }
  return hash;
}

}  // namespace

RepositoryPoller::RepositoryPoller(ModelManager* manager,
                                   std::string repository, Clock* clock,
                                   Clock::Duration interval)
    : manager_(manager),
      repository_(std::move(repository)),
      thread_(clock, interval) {
  absl::MutexLock lock(&poll_mu_);
  seen_ = Scan();
}

RepositoryPoller::~RepositoryPoller() { Stop(); }

std::map<std::string, uint64_t> RepositoryPoller::Scan() const {
  std::map<std::string, uint64_t> found;
  auto names = ListModelFolders(repository_);
  if (!names.ok()) return found;
  for (const std::string& name : *names) {
    found[name] = Fingerprint(fs::path(repository_) / name);
  }
  return found;
}

void RepositoryPoller::Poll() {
  absl::MutexLock lock(&poll_mu_);
  std::map<std::string, uint64_t> now = Scan();
  for (const auto& [name, fingerprint] : now) {
    auto before = seen_.find(name);
    if (before != seen_.end() && before->second == fingerprint) continue;
    spdlog::info("model '{}' {} in the repository: loading", name,
                 before == seen_.end() ? "appeared" : "changed");
    manager_->Load(name).IgnoreError();  // failures are recorded and logged
  }
  for (const auto& [name, fingerprint] : seen_) {
    if (now.contains(name)) continue;
    spdlog::info("model '{}' left the repository: unloading", name);
    manager_->Unload(name).IgnoreError();  // NotFound when it never loaded
  }
  seen_ = std::move(now);
}

void RepositoryPoller::Start() {
  thread_.Start([this] { Poll(); });
}

void RepositoryPoller::Stop() { thread_.Stop(); }

}  // namespace coalesce
