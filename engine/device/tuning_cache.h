// TuningCache: the winners of measured algorithm searches (cuDNN engine
// configurations timed at warm-up, per convolution shape), kept so that a
// second start of the server picks the same winners without timing again,
// the way TensorRT keeps a timing cache.
//
// Keys are strings the kernels compose; a choice is an opaque string the
// kernels can rebuild their winner from (for cuDNN: an engine id and its
// knob values). The cache knows nothing of devices, so it can be created
// and loaded before any kernel exists: the kernels start each key with the
// identity of the device and library they measured on ("NVIDIA H100 80GB
// HBM3, sm_90, cuDNN 91900 | cudnn-graph-conv/1 ..."), so entries of several
// GPUs and library versions live side by side in one cache and one file,
// and each kernel finds only its own.
//
// The file is text: `coalesce-tuning-cache 2`, then one
// `<key><TAB><choice><TAB><microseconds>` line per entry.
//
// Thread-safe: the instances of every model may share one.
#ifndef COALESCE_ENGINE_DEVICE_TUNING_CACHE_H_
#define COALESCE_ENGINE_DEVICE_TUNING_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace coalesce {

struct TuningChoice {
  std::string choice;       // no tab or newline
  double microseconds = 0;  // the winner's measured time
};

class TuningCache {
 public:
  TuningCache() = default;

  std::optional<TuningChoice> Find(const std::string& key) const;
  // Replaces an entry of the same key. Ignored (it could not be saved and
  // read back): an empty key, a key or choice with a tab or a newline, a
  // time that is negative or not finite.
  void Insert(const std::string& key, TuningChoice choice);
  size_t size() const;
  // Whether an Insert changed an entry since the last successful Save: the
  // file is behind the cache.
  bool changed() const;

  // Merges every entry of `path`; an entry already here (measured by this
  // process) is kept. The file is read in full first: on an error nothing
  // was merged. NotFound when there is no file (a first start);
  // InvalidArgument naming the line for a file that is not a version-2
  // tuning cache (another header, version 1 included, names line 1; the
  // caller logs it and goes on without: a cache only saves time); else the
  // error of reading it.
  absl::Status Load(const std::string& path);
  // Writes every entry to `path` atomically (`<path>.tmp.<pid>`, flushed,
  // then renamed over it), so that a crash never leaves half a cache.
  absl::Status Save(const std::string& path);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, TuningChoice> entries_ ABSL_GUARDED_BY(mu_);
  bool changed_ ABSL_GUARDED_BY(mu_) = false;
  // Inserts that changed an entry, ever: a Save clears changed_ only when
  // none happened while it wrote.
  uint64_t inserts_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_TUNING_CACHE_H_
