#include "server/idle_diagnostics.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace coalesce {

IdleDiagnostics::IdleDiagnostics(const ModelManager* manager, Clock* clock,
                                 Options options)
    : manager_(manager),
      clock_(clock),
      options_(options),
      thread_(clock, options.interval) {}

IdleDiagnostics::~IdleDiagnostics() { Stop(); }

void IdleDiagnostics::Start() {
  thread_.Start([this] { Update(clock_->Now()); });
}

void IdleDiagnostics::Stop() { thread_.Stop(); }

void IdleDiagnostics::Update(Clock::TimePoint now) {
  auto served = manager_->Served("");
  if (!served.ok()) return;
  absl::MutexLock lock(&mu_);
  std::set<Key> seen;
  for (const std::shared_ptr<ServedModel>& model : *served) {
    const Key key{model->name, model->version};
    seen.insert(key);
    Tracked& tracked = models_[key];
    const ModelStatsSnapshot stats = model->batcher->Stats();
    tracked.samples.push_back(Sample{now, stats.execution_count,
                                     stats.inference_count,
                                     model->batcher->InstanceStates()});
    while (tracked.samples.size() > 2 &&
           now - tracked.samples[1].at >= options_.window) {
      tracked.samples.pop_front();
    }
    Diagnose(key, *model, tracked, now);
  }
  std::erase_if(models_,
                [&](const auto& entry) { return !seen.contains(entry.first); });
}

void IdleDiagnostics::Diagnose(const Key& key, const ServedModel& model,
                               Tracked& tracked, Clock::TimePoint now) {
  if (tracked.samples.size() < 2) return;
  const Sample& first = tracked.samples.front();
  const Sample& last = tracked.samples.back();
  tracked.published.resize(last.states.size());
  const std::vector<absl::Status> health = model.batcher->InstanceHealth();
  const std::optional<LatencyTargetSnapshot> target =
      model.batcher->LatencyTarget();
  for (size_t i = 0; i < last.states.size() && i < first.states.size(); ++i) {
    InstanceWindow window;
    for (int s = 0; s < kInstanceStates; ++s) {
      window.states.time[s] = last.states[i].time[s] - first.states[i].time[s];
    }
    window.executions = last.executions - first.executions;
    window.inferences = last.inferences - first.inferences;
    window.max_batch_size = model.config.max_batch_size();
    window.max_queue_delay = std::chrono::microseconds(
        model.config.dynamic_batching().max_queue_delay_microseconds());
    if (target) {
      window.latency_target = target->target;
      window.target_wait = target->decision.wait;
      window.target_batch_size = target->decision.batch_size;
    }
    IdleDiagnosis diagnosis =
        i < health.size() && !health[i].ok()
            ? IdleDiagnosis{"failed",
                            absl::StrCat(
                                "a sticky fault stopped the instance: ",
                                health[i].message())}
            : DiagnoseInstance(window);
    Published& published = tracked.published[i];
    if (diagnosis.reason != published.logged_reason &&
        (!published.logged_at ||
         now - *published.logged_at >= options_.republish)) {
      spdlog::info("model '{}' version {} instance {}: {}: {}", key.first,
                   key.second, i, diagnosis.reason, diagnosis.detail);
      published.logged_reason = diagnosis.reason;
      published.logged_at = now;
    }
    if (diagnosis.reason == published.diagnosis.reason &&
        now - published.at < options_.republish) {
      continue;  // Same reason: refresh the numbers once a minute.
    }
    published.diagnosis = std::move(diagnosis);
    published.at = now;
  }
}

std::vector<InstanceDiagnosis> IdleDiagnostics::Current() const {
  absl::MutexLock lock(&mu_);
  std::vector<InstanceDiagnosis> current;
  for (const auto& [key, tracked] : models_) {
    for (size_t i = 0; i < tracked.published.size(); ++i) {
      if (tracked.published[i].diagnosis.reason.empty()) continue;
      current.push_back(InstanceDiagnosis{key.first, key.second,
                                          static_cast<int>(i),
                                          tracked.published[i].diagnosis});
    }
  }
  return current;
}

}  // namespace coalesce
