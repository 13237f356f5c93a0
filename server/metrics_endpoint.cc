#include "server/metrics_endpoint.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"

namespace coalesce {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Triton's families, read from every served model version per scrape.
class TritonCompatibleCollector : public prometheus::Collectable {
 public:
  explicit TritonCompatibleCollector(const ModelManager* manager)
      : manager_(manager) {}

  std::vector<MetricFamily> Collect() const override {
    enum Family {
      kSuccess, kFailure, kCount, kExecCount, kPending, kRequestUs, kQueueUs,
      kInputUs, kInferUs, kOutputUs, kFamilies,
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
           "Instantaneous number of pending requests awaiting execution per-model.",
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
      auto us = [](const DurationStat& d) { return static_cast<double>(d.ns / 1000); };
      add(kSuccess, static_cast<double>(s.success.count));
      static constexpr const char* kReasons[kFailureReasons] = {
          "REJECTED", "CANCELED", "BACKEND", "OTHER"};
      for (int r = 0; r < kFailureReasons; ++r) {
        add(kFailure, static_cast<double>(s.failures[r]), {{"reason", kReasons[r]}});
      }
      add(kCount, static_cast<double>(s.inference_count));
      add(kExecCount, static_cast<double>(s.execution_count));
      add(kPending, static_cast<double>(model->batcher->QueuedRequests()));
      add(kRequestUs, us(s.success));
      add(kQueueUs, us(s.queue));
      add(kInputUs, us(s.compute_input));
      add(kInferUs, us(s.compute_infer));
      add(kOutputUs, us(s.compute_output));
    }
    return families;
  }

 private:
  const ModelManager* const manager_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, int port, const ModelManager* manager) {
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
  auto collector = std::make_shared<TritonCompatibleCollector>(manager);
  endpoint->exposer_->RegisterCollectable(collector);
  endpoint->collector_ = collector;
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  endpoint->port_ = ports.empty() ? port : ports.front();
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace coalesce
