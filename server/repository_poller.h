// RepositoryPoller: --model-control-mode poll. Every `interval` it looks at
// the repository's model folders and brings the served models in line:
// a new folder is loaded, a folder whose files changed (any file added,
// removed, resized or rewritten; the server's own tuning cache,
// model_tuning_cache.h, does not count) is reloaded, a removed folder is
// unloaded.
// A reload swaps the new versions in before the old ones drain
// (ModelManager::Load), so no request is dropped; a reload that fails leaves
// the old versions serving and is retried when the files change again.
//
// Start() runs Poll() on a thread of its own until Stop() or destruction;
// Poll() may also be called directly (tests). Thread-safe.
#ifndef COALESCE_SERVER_REPOSITORY_POLLER_H_
#define COALESCE_SERVER_REPOSITORY_POLLER_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "batching/clock.h"
#include "server/model_manager.h"
#include "server/periodic_thread.h"

namespace coalesce {

class RepositoryPoller {
 public:
  // Takes the repository's current state as the baseline: call after the
  // initial load. REQUIRES: manager and clock outlive the poller.
  RepositoryPoller(ModelManager* manager, std::string repository, Clock* clock,
                   Clock::Duration interval);
  ~RepositoryPoller();

  void Start();
  void Stop();

  // One pass: loads, reloads and unloads what changed since the last pass.
  void Poll();

 private:
  // Model folder -> a fingerprint of every file under it (path, size,
  // modification time).
  std::map<std::string, uint64_t> Scan() const;

  ModelManager* const manager_;
  const std::string repository_;

  absl::Mutex poll_mu_;  // one pass at a time
  std::map<std::string, uint64_t> seen_ ABSL_GUARDED_BY(poll_mu_);

  PeriodicThread thread_;  // last: stopped before the rest goes
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_REPOSITORY_POLLER_H_
