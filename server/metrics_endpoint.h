// MetricsEndpoint: Prometheus metrics over HTTP (prometheus-cpp's Exposer)
// at http://<address>:<port>/metrics, read from the served models at scrape
// time, so serving pays nothing per request for them.
//
// Families, with Triton's names, types and labels (model, version) so that
// dashboards and tools written for Triton keep working (docs/metrics.md):
//   nv_inference_request_success, nv_inference_request_failure{reason},
//   nv_inference_count, nv_inference_exec_count (counters),
//   nv_inference_pending_request_count (gauge: requests queued now),
//   nv_inference_{request,queue,compute_input,compute_infer,compute_output}
//   _duration_us (counters, microseconds); with NVML (gpu_metrics.h)
//   nv_gpu_utilization, nv_gpu_memory_total_bytes, nv_gpu_memory_used_bytes,
//   nv_gpu_power_usage (gauges, label gpu_uuid).
// And Coalesce's own (coalesce_*, process_*), among them each instance's
// time per state and its idle diagnosis (idle_diagnostics.h).
// Every value comes from the same accumulators as the ModelStatistics RPC
// (batching/model_stats.h), so the two always agree.
#ifndef COALESCE_SERVER_METRICS_ENDPOINT_H_
#define COALESCE_SERVER_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/idle_diagnostics.h"
#include "server/model_manager.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace coalesce {

class MetricsEndpoint {
 public:
  // Listens on address:port (port 0: any free port). Unavailable when it
  // cannot bind. Loads NVML if it can (GpuMetrics::Open), logging why not.
  // REQUIRES: `manager` and `diagnostics` (may be null) outlive the endpoint.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& address, int port, const ModelManager* manager,
      const IdleDiagnostics* diagnostics);
  ~MetricsEndpoint();

  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;

  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<void> collector_;  // registered with exposer_
  int port_ = 0;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_METRICS_ENDPOINT_H_
