#include "server/metrics_endpoint.h"

#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"
#include "server/gpu_metrics.h"
#include "server/process_stats.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Triton's families, read from every served model version per scrape.
// A histogram sample from non-cumulative counts over `bounds` (scaled to
// the family's unit), the total count and the sum.
template <size_t N>
ClientMetric HistogramMetric(const FixedHistogram<N>& hist,
                             const int64_t (&bounds)[N], double scale,
                             uint64_t count, double sum) {
  ClientMetric metric;
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= N; ++i) {
    cumulative += hist.counts[i];
    metric.histogram.bucket.push_back(
        {cumulative,
         i < N ? bounds[i] * scale : std::numeric_limits<double>::infinity()});
  }
  metric.histogram.sample_count = count;
  metric.histogram.sample_sum = sum;
  return metric;
}

// Triton's families and Coalesce's own (docs/metrics.md), read from every
// served model version per scrape.
class TritonCompatibleCollector : public prometheus::Collectable {
 public:
  TritonCompatibleCollector(const ModelManager* manager,
                            const IdleDiagnostics* diagnostics,
                            std::unique_ptr<GpuMetrics> gpus)
      : manager_(manager), diagnostics_(diagnostics), gpus_(std::move(gpus)) {}

  std::vector<MetricFamily> Collect() const override {
    enum Family {
      kSuccess,
      kFailure,
      kCount,
      kExecCount,
      kPending,
      kRequestUs,
      kQueueUs,
      kInputUs,
      kInferUs,
      kOutputUs,
      kFamilies,
    };
    std::vector<MetricFamily> families(kFamilies);
    auto define = [&](Family f, const char* name, const char* help,
                      MetricType type) {
      families[f].name = name;
      families[f].help = help;
      families[f].type = type;
    };
    define(kSuccess, "nv_inference_request_success",
           "Number of successful inference requests, all batch sizes",
           MetricType::Counter);
    define(kFailure, "nv_inference_request_failure",
           "Number of failed inference requests, all batch sizes",
           MetricType::Counter);
    define(kCount, "nv_inference_count",
           "Number of inferences performed (does not include cached requests)",
           MetricType::Counter);
    define(kExecCount, "nv_inference_exec_count",
           "Number of model executions performed (does not include cached "
           "requests)",
           MetricType::Counter);
    define(kPending, "nv_inference_pending_request_count",
           "Instantaneous number of pending requests awaiting execution "
           "per-model.",
           MetricType::Gauge);
    define(kRequestUs, "nv_inference_request_duration_us",
           "Cumulative inference request duration in microseconds (includes "
           "cached requests)",
           MetricType::Counter);
    define(kQueueUs, "nv_inference_queue_duration_us",
           "Cumulative inference queuing duration in microseconds (includes "
           "cached requests)",
           MetricType::Counter);
    define(kInputUs, "nv_inference_compute_input_duration_us",
           "Cumulative compute input duration in microseconds (does not "
           "include cached requests)",
           MetricType::Counter);
    define(kInferUs, "nv_inference_compute_infer_duration_us",
           "Cumulative compute inference duration in microseconds (does not "
           "include cached requests)",
           MetricType::Counter);
    define(kOutputUs, "nv_inference_compute_output_duration_us",
           "Cumulative inference compute output duration in microseconds "
           "(does not include cached requests)",
           MetricType::Counter);
    std::vector<MetricFamily> own = OwnFamilies();
    auto served = manager_->Served("");
    if (!served.ok()) return families;
    for (const std::shared_ptr<ServedModel>& model : *served) {
      const ModelStatsSnapshot s = model->batcher->Stats();
      const std::vector<ClientMetric::Label> labels = {
          {"model", model->name}, {"version", absl::StrCat(model->version)}};
      auto add = [&](Family f, double value,
                     std::vector<ClientMetric::Label> extra = {}) {
        ClientMetric metric;
        metric.label = labels;
        metric.label.insert(metric.label.end(), extra.begin(), extra.end());
        if (families[f].type == MetricType::Gauge) {
          metric.gauge.value = value;
        } else {
          metric.counter.value = value;
        }
        families[f].metric.push_back(std::move(metric));
      };
      auto us = [](const DurationStat& d) {
        return static_cast<double>(d.ns / 1000);
      };
      add(kSuccess, static_cast<double>(s.success.count));
      auto failures = [&s](FailureReason r) {
        return static_cast<double>(s.failures[static_cast<int>(r)]);
      };
      add(kFailure,
          failures(FailureReason::kRejected) +
              failures(FailureReason::kTimedOut),
          {{"reason", "REJECTED"}});
      add(kFailure, failures(FailureReason::kCanceled),
          {{"reason", "CANCELED"}});
      add(kFailure, failures(FailureReason::kBackend), {{"reason", "BACKEND"}});
      add(kFailure, failures(FailureReason::kOther), {{"reason", "OTHER"}});
      add(kCount, static_cast<double>(s.inference_count));
      add(kExecCount, static_cast<double>(s.execution_count));
      add(kPending, static_cast<double>(model->batcher->QueuedRequests()));
      add(kRequestUs, us(s.success));
      add(kQueueUs, us(s.queue));
      add(kInputUs, us(s.compute_input));
      add(kInferUs, us(s.compute_infer));
      add(kOutputUs, us(s.compute_output));
      AddCoalesceFamilies(*model, s, labels, own);
    }
    if (diagnostics_ != nullptr) {
      AddDiagnoses(diagnostics_->Current(), own[kDiagnosis]);
    }
    for (MetricFamily& f : own) families.push_back(std::move(f));
    if (gpus_ != nullptr) AddGpuFamilies(gpus_->Read(), families);
    families.push_back(BuildInfo());
    AddProcessFamilies(ReadProcessStats(), families);
    return families;
  }

 private:
  // Coalesce's families, following Prometheus naming (base units).
  enum Own {
    kRequestSeconds,
    kQueueSeconds,
    kInputSeconds,
    kInferSeconds,
    kOutputSeconds,
    kBatchSize,
    kRequests,
    kQueueDepth,
    kInstanceState,
    kInstanceHealthy,
    kSetupBatches,
    kTargetSeconds,
    kTargetWait,
    kTargetBatch,
    kTargetPredicted,
    kTargetObserved,
    kTargetArrivals,
    kTargetShed,
    kDiagnosis,
    kOwnFamilies,
  };

  static std::vector<MetricFamily> OwnFamilies() {
    std::vector<MetricFamily> own(kOwnFamilies);
    auto define = [&](Own f, const char* name, const char* help, MetricType t) {
      own[f].name = name;
      own[f].help = help;
      own[f].type = t;
    };
    define(kRequestSeconds, "coalesce_request_duration_seconds",
           "Successful requests: enqueue to answer", MetricType::Histogram);
    define(kQueueSeconds, "coalesce_queue_duration_seconds",
           "Successful requests: time queued before their batch formed",
           MetricType::Histogram);
    define(kInputSeconds, "coalesce_compute_input_duration_seconds",
           "Successful requests: their batch's gather and copy in",
           MetricType::Histogram);
    define(kInferSeconds, "coalesce_compute_infer_duration_seconds",
           "Successful requests: their batch's run", MetricType::Histogram);
    define(kOutputSeconds, "coalesce_compute_output_duration_seconds",
           "Successful requests: their batch's copy out and scatter",
           MetricType::Histogram);
    define(kBatchSize, "coalesce_batch_size", "Rows of each executed batch",
           MetricType::Histogram);
    define(kRequests, "coalesce_requests_total",
           "Requests answered, by outcome", MetricType::Counter);
    define(kQueueDepth, "coalesce_queue_depth",
           "Requests queued now, not yet in a batch, by priority level "
           "(0 = highest)",
           MetricType::Gauge);
    define(kInstanceState, "coalesce_instance_state_seconds_total",
           "Time each model instance spent in each state; the states are "
           "exclusive and add up to the instance's lifetime",
           MetricType::Counter);
    define(kInstanceHealthy, "coalesce_instance_healthy",
           "1 while the model instance can run batches; 0 after a sticky "
           "fault (a poisoned device context): it gets no more batches",
           MetricType::Gauge);
    define(kSetupBatches, "coalesce_setup_batches_total",
           "Batches the model instance's setup thread ran because they "
           "needed device setup (a plan to bind, a graph to capture); 0 "
           "after warm-up for models of fixed shapes",
           MetricType::Counter);
    // Models with latency_target_p99_ms only (docs/batching.md).
    define(kTargetSeconds, "coalesce_latency_target_seconds",
           "The model's p99 latency target (latency_target_p99_ms)",
           MetricType::Gauge);
    define(kTargetWait, "coalesce_latency_target_wait_seconds",
           "How long the latency-target policy lets the oldest request wait "
           "for its batch to fill, as last decided",
           MetricType::Gauge);
    define(kTargetBatch, "coalesce_latency_target_batch_size",
           "The batch size the latency-target policy waits for, as last "
           "decided",
           MetricType::Gauge);
    define(kTargetPredicted, "coalesce_latency_target_predicted_p99_seconds",
           "The p99 latency the policy predicts for its decision (fill time "
           "+ two batches' service time)",
           MetricType::Gauge);
    define(kTargetObserved, "coalesce_latency_target_observed_p99_seconds",
           "The p99 latency of the model's last 200 answered requests, as "
           "the policy measured it",
           MetricType::Gauge);
    define(kTargetArrivals, "coalesce_latency_target_arrival_rows_per_second",
           "Rows arriving per second, as the policy estimates them (about "
           "the last second)",
           MetricType::Gauge);
    define(kTargetShed, "coalesce_latency_target_shed_total",
           "Requests answered DEADLINE_EXCEEDED at once because they could "
           "no longer meet the target or their deadline (also counted as "
           "outcome=\"timed_out\")",
           MetricType::Counter);
    define(kDiagnosis, "coalesce_instance_diagnosis_info",
           "Why the model instance is not busier, over the last minute: a "
           "reason code and a sentence (value always 1)",
           MetricType::Gauge);
    return own;
  }

  static void AddDiagnoses(const std::vector<InstanceDiagnosis>& diagnoses,
                           MetricFamily& family) {
    for (const InstanceDiagnosis& d : diagnoses) {
      ClientMetric m;
      m.label = {{"model", d.model},
                 {"version", absl::StrCat(d.version)},
                 {"model_instance", absl::StrCat(d.instance)},
                 {"reason", d.diagnosis.reason},
                 {"detail", d.diagnosis.detail}};
      m.gauge.value = 1;
      family.metric.push_back(std::move(m));
    }
  }

  // Triton's GPU families. Values print in plain decimal (prometheus-cpp
  // uses 16 significant digits, so byte counts below 10^16 and watts never
  // take an exponent), which perf_analyzer's parser requires.
  static void AddGpuFamilies(const std::vector<GpuReading>& gpus,
                             std::vector<MetricFamily>& families) {
    auto family = [&](const char* name, const char* help, auto value) {
      MetricFamily f;
      f.name = name;
      f.help = help;
      f.type = MetricType::Gauge;
      for (const GpuReading& gpu : gpus) {
        const std::optional<double> v = value(gpu);
        if (!v) continue;
        ClientMetric m;
        m.label = {{"gpu_uuid", gpu.uuid}};
        m.gauge.value = *v;
        f.metric.push_back(std::move(m));
      }
      if (!f.metric.empty()) families.push_back(std::move(f));
    };
    auto bytes = [](const std::optional<uint64_t>& b) {
      return b ? std::optional<double>(static_cast<double>(*b)) : std::nullopt;
    };
    family("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)",
           [](const GpuReading& g) { return g.utilization; });
    family("nv_gpu_memory_total_bytes", "GPU total memory, in bytes",
           [&](const GpuReading& g) { return bytes(g.memory_total_bytes); });
    family("nv_gpu_memory_used_bytes", "GPU used memory, in bytes",
           [&](const GpuReading& g) { return bytes(g.memory_used_bytes); });
    family("nv_gpu_power_usage", "GPU power usage in watts",
           [](const GpuReading& g) { return g.power_watts; });
  }

  static void AddCoalesceFamilies(
      const ServedModel& model, const ModelStatsSnapshot& s,
      const std::vector<ClientMetric::Label>& labels,
      std::vector<MetricFamily>& own) {
    auto push = [&](Own f, ClientMetric metric,
                    std::vector<ClientMetric::Label> extra = {}) {
      metric.label = labels;
      metric.label.insert(metric.label.end(), extra.begin(), extra.end());
      own[f].metric.push_back(std::move(metric));
    };
    constexpr double kNsToSeconds = 1e-9;
    auto seconds = [&](Own f, const DurationHistogram& h,
                       const DurationStat& d) {
      push(f, HistogramMetric(h, kDurationBoundsNs, kNsToSeconds, d.count,
                              d.ns * kNsToSeconds));
    };
    seconds(kRequestSeconds, s.success_hist, s.success);
    seconds(kQueueSeconds, s.queue_hist, s.queue);
    seconds(kInputSeconds, s.compute_input_hist, s.compute_input);
    seconds(kInferSeconds, s.compute_infer_hist, s.compute_infer);
    seconds(kOutputSeconds, s.compute_output_hist, s.compute_output);
    push(kBatchSize, HistogramMetric(s.batch_size_hist, kBatchSizeBounds, 1.0,
                                     s.execution_count,
                                     static_cast<double>(s.inference_count)));
    auto count = [](double v) {
      ClientMetric m;
      m.counter.value = v;
      return m;
    };
    auto failures = [&s](FailureReason r) {
      return static_cast<double>(s.failures[static_cast<int>(r)]);
    };
    push(kRequests, count(static_cast<double>(s.success.count)),
         {{"outcome", "success"}});
    push(kRequests, count(failures(FailureReason::kRejected)),
         {{"outcome", "rejected"}});
    push(kRequests, count(failures(FailureReason::kTimedOut)),
         {{"outcome", "timed_out"}});
    push(kRequests, count(failures(FailureReason::kCanceled)),
         {{"outcome", "cancelled"}});
    push(kRequests, count(failures(FailureReason::kOther)),
         {{"outcome", "invalid"}});
    push(kRequests, count(failures(FailureReason::kBackend)),
         {{"outcome", "internal"}});
    const std::vector<size_t> levels = model.batcher->QueuedRequestsByLevel();
    for (size_t level = 0; level < levels.size(); ++level) {
      ClientMetric depth;
      depth.gauge.value = static_cast<double>(levels[level]);
      push(kQueueDepth, std::move(depth),
           {{"priority_level", absl::StrCat(level)}});
    }
    const std::vector<InstanceStateTotals> states =
        model.batcher->InstanceStates();
    for (size_t i = 0; i < states.size(); ++i) {
      for (int s = 0; s < kInstanceStates; ++s) {
        push(kInstanceState,
             count(std::chrono::duration<double>(states[i].time[s]).count()),
             {{"model_instance", absl::StrCat(i)},
              {"state", InstanceStateName(static_cast<InstanceState>(s))}});
      }
    }
    const std::vector<absl::Status> health = model.batcher->InstanceHealth();
    for (size_t i = 0; i < health.size(); ++i) {
      ClientMetric healthy;
      healthy.gauge.value = health[i].ok() ? 1 : 0;
      push(kInstanceHealthy, std::move(healthy),
           {{"model_instance", absl::StrCat(i)}});
    }
    const std::vector<int64_t> setup = model.batcher->SetupBatches();
    for (size_t i = 0; i < setup.size(); ++i) {
      push(kSetupBatches, count(static_cast<double>(setup[i])),
           {{"model_instance", absl::StrCat(i)}});
    }
    if (auto target = model.batcher->LatencyTarget()) {
      auto gauge = [](double v) {
        ClientMetric m;
        m.gauge.value = v;
        return m;
      };
      auto secs = [&gauge](Clock::Duration d) {
        return gauge(std::chrono::duration<double>(d).count());
      };
      push(kTargetSeconds, secs(target->target));
      push(kTargetWait, secs(target->decision.wait));
      push(kTargetBatch, gauge(target->decision.batch_size));
      if (target->decision.predicted_p99) {
        push(kTargetPredicted, secs(*target->decision.predicted_p99));
      }
      if (target->observed_p99) {
        push(kTargetObserved, secs(*target->observed_p99));
      }
      push(kTargetArrivals, gauge(target->arrival_rows_per_second));
      push(kTargetShed, count(static_cast<double>(target->shed)));
    }
  }

  // The process and its container (process_stats.h); a family is left out
  // when its value cannot be read (no cgroup, no limit).
  static void AddProcessFamilies(const ProcessStats& p,
                                 std::vector<MetricFamily>& families) {
    auto one = [&](const char* name, const char* help, MetricType type,
                   std::optional<double> value) {
      if (!value) return;
      MetricFamily f;
      f.name = name;
      f.help = help;
      f.type = type;
      ClientMetric m;
      (type == MetricType::Counter ? m.counter.value : m.gauge.value) = *value;
      f.metric.push_back(std::move(m));
      families.push_back(std::move(f));
    };
    auto as_double = [](const std::optional<uint64_t>& v) {
      return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
    };
    one("process_cpu_seconds_total",
        "User and system CPU time of the server process", MetricType::Counter,
        p.cpu_seconds);
    one("process_resident_memory_bytes",
        "Resident memory of the server process", MetricType::Gauge,
        as_double(p.resident_bytes));
    one("coalesce_cgroup_memory_usage_bytes",
        "Memory the server's cgroup (container) uses", MetricType::Gauge,
        as_double(p.cgroup_memory_bytes));
    one("coalesce_cgroup_memory_limit_bytes",
        "Memory limit of the server's cgroup; absent when unlimited",
        MetricType::Gauge, as_double(p.cgroup_memory_limit));
    one("coalesce_cgroup_cpu_limit_cores",
        "CPU quota of the server's cgroup in cores; absent when unlimited",
        MetricType::Gauge, p.cgroup_cpu_limit_cores);
  }

  static MetricFamily BuildInfo() {
    MetricFamily f;
    f.name = "coalesce_build_info";
    f.help = "The server's build: version (git describe) and build type";
    f.type = MetricType::Gauge;
    ClientMetric m;
    m.label = {{"version", COALESCE_VERSION},
               {"build_type", COALESCE_BUILD_TYPE}};
    m.gauge.value = 1;
    f.metric.push_back(std::move(m));
    return f;
  }

  const ModelManager* const manager_;
  const IdleDiagnostics* const diagnostics_;
  const std::unique_ptr<GpuMetrics> gpus_;  // null without NVML
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, int port, const ModelManager* manager,
    const IdleDiagnostics* diagnostics) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  const std::string bind = absl::StrCat(
      address.find(':') != std::string::npos ? "[" + address + "]" : address,
      ":", port);
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(bind);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", bind, ": ", e.what()));
  }
  absl::StatusOr<std::unique_ptr<GpuMetrics>> gpus = GpuMetrics::Open();
  if (gpus.ok()) {
    spdlog::info("GPU metrics for {} GPU(s) through NVML",
                 (*gpus)->Read().size());
  } else {
    spdlog::info("no GPU metrics: {}", std::string(gpus.status().message()));
  }
  auto collector = std::make_shared<TritonCompatibleCollector>(
      manager, diagnostics, gpus.ok() ? *std::move(gpus) : nullptr);
  endpoint->exposer_->RegisterCollectable(collector);
  endpoint->collector_ = collector;
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  endpoint->port_ = ports.empty() ? port : ports.front();
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace coalesce
