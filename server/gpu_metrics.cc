#include "server/gpu_metrics.h"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

// NVML's structs, under NVML's own tags (nvml.h), at global scope: the fake
// library the tests load (tests/fake_nvml) declares the same, so that the
// function types match under UBSan's -fsanitize=function.
struct nvmlUtilization_st {
  unsigned int gpu;     // percent of time a kernel ran, last sample period
  unsigned int memory;  // percent of time memory was read or written
};
struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

namespace coalesce {
namespace {

// The subset of NVML's C API read here (nvml.h; stable ABI since the _v2
// entry points).
using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using NvmlDevice = void*;
using NvmlUtilization = ::nvmlUtilization_st;
using NvmlMemory = ::nvmlMemory_st;
constexpr unsigned kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct NvmlApi {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  const char* (*error_string)(NvmlReturn);
  NvmlReturn (*device_count)(unsigned int*);
  NvmlReturn (*handle_by_index)(unsigned int, NvmlDevice*);
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned int);
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*);
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*);
  NvmlReturn (*power)(NvmlDevice, unsigned int*);
};

// Looks up `name`; on failure records it in *missing (the first one only).
template <typename Fn>
bool Bind(void* library, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
  return *fn != nullptr;
}

class NvmlGpuMetrics : public GpuMetrics {
 public:
  NvmlGpuMetrics(void* library, NvmlApi api,
                 std::vector<std::pair<NvmlDevice, std::string>> devices)
      : library_(library), api_(api), devices_(std::move(devices)) {}

  ~NvmlGpuMetrics() override {
    api_.shutdown();
    dlclose(library_);
  }

  std::vector<GpuReading> Read() const override {
    std::vector<GpuReading> readings;
    for (const auto& [device, uuid] : devices_) {
      GpuReading r;
      r.uuid = uuid;
      NvmlUtilization util{};
      if (api_.utilization(device, &util) == 0)
        r.utilization = util.gpu / 100.0;
      NvmlMemory memory{};
      if (api_.memory(device, &memory) == 0) {
        r.memory_total_bytes = memory.total;
        r.memory_used_bytes = memory.used;
      }
      unsigned int milliwatts = 0;
      if (api_.power(device, &milliwatts) == 0)
        r.power_watts = milliwatts / 1000.0;
      readings.push_back(std::move(r));
    }
    return readings;
  }

 private:
  void* const library_;
  const NvmlApi api_;
  const std::vector<std::pair<NvmlDevice, std::string>> devices_;
};

}  // namespace

bool GpuVisible(const char* visible, unsigned index, const std::string& uuid) {
  if (visible == nullptr) return true;
  for (absl::string_view entry : absl::StrSplit(visible, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    unsigned n = 0;
    if (absl::SimpleAtoi(entry, &n)) {
      if (n == index) return true;
    } else if (!entry.empty() && absl::StartsWith(uuid, entry)) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<GpuMetrics>> GpuMetrics::Open() {
  const char* override_path = std::getenv("COALESCE_NVML_LIBRARY");
  const char* path =
      override_path != nullptr ? override_path : "libnvidia-ml.so.1";
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot load NVML: ", dlerror()));
  }
  NvmlApi api{};
  std::string missing;
  const bool bound =
      Bind(library, "nvmlInit_v2", &api.init, &missing) &&
      Bind(library, "nvmlShutdown", &api.shutdown, &missing) &&
      Bind(library, "nvmlErrorString", &api.error_string, &missing) &&
      Bind(library, "nvmlDeviceGetCount_v2", &api.device_count, &missing) &&
      Bind(library, "nvmlDeviceGetHandleByIndex_v2", &api.handle_by_index,
           &missing) &&
      Bind(library, "nvmlDeviceGetUUID", &api.uuid, &missing) &&
      Bind(library, "nvmlDeviceGetUtilizationRates", &api.utilization,
           &missing) &&
      Bind(library, "nvmlDeviceGetMemoryInfo", &api.memory, &missing) &&
      Bind(library, "nvmlDeviceGetPowerUsage", &api.power, &missing);
  if (!bound) {
    dlclose(library);
    return absl::NotFoundError(absl::StrCat(path, " lacks ", missing));
  }
  if (NvmlReturn r = api.init(); r != 0) {
    std::string why = api.error_string(r);
    dlclose(library);
    return absl::UnavailableError(absl::StrCat("NVML did not start: ", why));
  }
  unsigned int count = 0;
  if (NvmlReturn r = api.device_count(&count); r != 0) {
    std::string why = api.error_string(r);
    api.shutdown();
    dlclose(library);
    return absl::UnavailableError(absl::StrCat("NVML lists no GPUs: ", why));
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::vector<std::pair<NvmlDevice, std::string>> devices;
  for (unsigned i = 0; i < count; ++i) {
    NvmlDevice device = nullptr;
    char uuid[kUuidBufferSize] = {};
    if (api.handle_by_index(i, &device) != 0 ||
        api.uuid(device, uuid, kUuidBufferSize) != 0) {
      continue;
    }
    if (GpuVisible(visible, i, uuid)) devices.emplace_back(device, uuid);
  }
  return std::unique_ptr<GpuMetrics>(
      new NvmlGpuMetrics(library, api, std::move(devices)));
}

}  // namespace coalesce
