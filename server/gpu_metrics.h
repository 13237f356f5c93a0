// GpuMetrics: utilization, memory and power of the GPUs, read through NVML
// for the metrics endpoint's Triton-compatible nv_gpu_* families.
//
// NVML is loaded at run time (dlopen of $COALESCE_NVML_LIBRARY, else
// libnvidia-ml.so.1, the driver's), so the server has no link-time
// dependency on the driver and machines without a GPU simply have no GPUs
// here. When CUDA_VISIBLE_DEVICES is set, only the GPUs it names (by index
// or UUID prefix) are reported, as CUDA sees them. Read() queries NVML on
// each call (a scrape); a value NVML cannot give is left out. Thread-safe.
#ifndef COALESCE_SERVER_GPU_METRICS_H_
#define COALESCE_SERVER_GPU_METRICS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coalesce {

struct GpuReading {
  std::string uuid;                   // "GPU-..."
  std::optional<double> utilization;  // 0.0 - 1.0
  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<double> power_watts;
};

class GpuMetrics {
 public:
  // NotFound when NVML cannot be loaded, Unavailable when it does not
  // initialize (no driver, no GPU); the message says which and why.
  static absl::StatusOr<std::unique_ptr<GpuMetrics>> Open();
  virtual ~GpuMetrics() = default;

  virtual std::vector<GpuReading> Read() const = 0;
};

// Whether the GPU at NVML index `index` with `uuid` is visible under
// CUDA_VISIBLE_DEVICES = `visible` (a comma-separated list of indices or
// UUID prefixes; unset = all). Exposed for tests.
bool GpuVisible(const char* visible, unsigned index, const std::string& uuid);

}  // namespace coalesce

#endif  // COALESCE_SERVER_GPU_METRICS_H_
