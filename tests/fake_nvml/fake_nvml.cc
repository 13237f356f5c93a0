// A stand-in for the NVIDIA driver's NVML (libnvidia-ml.so.1) with two fixed
// GPUs, for testing the metrics endpoint's nv_gpu_* families on machines
// without a GPU: the server loads it through COALESCE_NVML_LIBRARY exactly
// as it loads the real library. Only the entry points server/gpu_metrics.cc
// binds are defined; the values are the ones tests/e2e/test_metrics.py
// expects.
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;   // NVML_ERROR_INVALID_ARGUMENT
constexpr int kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
constexpr int kNotSupported = 3;      // NVML_ERROR_NOT_SUPPORTED

struct FakeGpu {
  const char* uuid;
  unsigned utilization_percent;
  unsigned long long memory_total, memory_used;
  unsigned power_milliwatts;  // 0: not supported
};

// GPU 1 cannot report power, as some boards cannot.
constexpr FakeGpu kGpus[] = {
    {"GPU-00000000-1111-2222-3333-444444444444", 37, 85899345920ULL,
     1234567890ULL, 123456},
    {"GPU-55555555-6666-7777-8888-999999999999", 0, 17179869184ULL, 0ULL, 0},
};
constexpr unsigned kCount = sizeof(kGpus) / sizeof(kGpus[0]);

const FakeGpu* Gpu(void* handle) {
  for (const FakeGpu& gpu : kGpus) {
    if (handle == &gpu) return &gpu;
  }
  return nullptr;
}

}  // namespace

extern "C" {

// NVML's struct tags, as server/gpu_metrics.cc declares them: the function
// types must be the same for UBSan's -fsanitize=function.
struct nvmlUtilization_st {
  unsigned int gpu, memory;
};
struct nvmlMemory_st {
  unsigned long long total, free, used;
};

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int result) {
  return result == kSuccess ? "Success" : "Fake NVML error";
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  if (count == nullptr) return kInvalidArgument;
  *count = kCount;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= kCount || device == nullptr) return kInvalidArgument;
  *device = const_cast<FakeGpu*>(&kGpus[index]);
  return kSuccess;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  const FakeGpu* gpu = Gpu(device);
  if (gpu == nullptr || uuid == nullptr) return kInvalidArgument;
  if (std::strlen(gpu->uuid) + 1 > length) return kInsufficientSize;
  std::strcpy(uuid, gpu->uuid);
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_st* u) {
  const FakeGpu* gpu = Gpu(device);
  if (gpu == nullptr || u == nullptr) return kInvalidArgument;
  u->gpu = gpu->utilization_percent;
  u->memory = 0;
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_st* m) {
  const FakeGpu* gpu = Gpu(device);
  if (gpu == nullptr || m == nullptr) return kInvalidArgument;
  m->total = gpu->memory_total;
  m->used = gpu->memory_used;
  m->free = gpu->memory_total - gpu->memory_used;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(void* device, unsigned* milliwatts) {
  const FakeGpu* gpu = Gpu(device);
  if (gpu == nullptr || milliwatts == nullptr) return kInvalidArgument;
  if (gpu->power_milliwatts == 0) return kNotSupported;
  *milliwatts = gpu->power_milliwatts;
  return kSuccess;
}

}  // extern "C"
