// IdleDiagnostics: "why is it idle", per served model instance, kept current.
//
// Every Update(now) samples each served model version: its executions and
// each instance's time per state (batching/instance_timeline.h). Over the
// samples of the last `window` it runs DiagnoseInstance
// (batching/idle_diagnosis.h). A new reason is published at once and logged
// at most once per `republish` (a minute) per instance; the numbers of an
// unchanged reason are refreshed once per `republish`, so the info metric
// built on it does not churn series. Versions no longer served are
// forgotten.
//
// Start() runs Update every `interval` on a thread of its own until Stop()
// or destruction. Update and Current are thread-safe.
#ifndef COALESCE_SERVER_IDLE_DIAGNOSTICS_H_
#define COALESCE_SERVER_IDLE_DIAGNOSTICS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "batching/clock.h"
#include "batching/idle_diagnosis.h"
#include "server/model_manager.h"
#include "server/periodic_thread.h"

namespace coalesce {

struct InstanceDiagnosis {
  std::string model;
  int64_t version = 0;
  int instance = 0;  // index in the batcher's instances
  IdleDiagnosis diagnosis;
};

class IdleDiagnostics {
 public:
  struct Options {
    Clock::Duration interval = std::chrono::seconds(2);
    Clock::Duration window = std::chrono::seconds(60);
    Clock::Duration republish = std::chrono::seconds(60);
  };

  // REQUIRES: `manager` and `clock` outlive this object.
  IdleDiagnostics(const ModelManager* manager, Clock* clock, Options options);
  ~IdleDiagnostics();

  void Start();
  void Stop();

  void Update(Clock::TimePoint now);

  // The published diagnoses, by model, version and instance.
  std::vector<InstanceDiagnosis> Current() const;

 private:
  struct Sample {
    Clock::TimePoint at;
    uint64_t executions = 0;
    uint64_t inferences = 0;
    std::vector<InstanceStateTotals> states;
  };
  struct Published {
    IdleDiagnosis diagnosis;    // empty reason: none yet
    Clock::TimePoint at;        // of the diagnosis
    std::string logged_reason;  // the last one logged
    std::optional<Clock::TimePoint> logged_at;
  };
  struct Tracked {
    std::deque<Sample> samples;
    std::vector<Published> published;  // per instance
  };
  using Key = std::pair<std::string, int64_t>;

  void Diagnose(const Key& key, const ServedModel& model, Tracked& tracked,
                Clock::TimePoint now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ModelManager* const manager_;
  Clock* const clock_;
  const Options options_;

  mutable absl::Mutex mu_;
  std::map<Key, Tracked> models_ ABSL_GUARDED_BY(mu_);
  PeriodicThread thread_;  // last: stopped before the rest goes
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_IDLE_DIAGNOSTICS_H_
