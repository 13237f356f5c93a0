#include "engine/cuda/cuda_ipc_memory.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_status.h"

namespace coalesce {
namespace {

// Copies are synchronous (cudaMemcpy on the legacy default stream of the
// calling thread, after cudaSetDevice), so a read sees every write the
// client finished before its request, and a write is done before the
// response leaves.
class CudaIpcMemory : public SharedDeviceMemory {
 public:
  CudaIpcMemory(int ordinal, char* base, size_t size)
      : ordinal_(ordinal), base_(base), size_(size) {}
  ~CudaIpcMemory() override {
    cudaSetDevice(ordinal_);
    cudaIpcCloseMemHandle(base_);
  }

  size_t size() const override { return size_; }
  int ordinal() const override { return ordinal_; }
  // Opened in the device's primary context, which the plugin's streams use
  // too, so the executor's device-to-device copies reach it.
  char* device_data() const override { return base_; }

  absl::Status Read(size_t offset, size_t bytes, void* host) override {
    absl::Status s = CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice");
    if (!s.ok()) return s;
    return CudaStatus(
        cudaMemcpy(host, base_ + offset, bytes, cudaMemcpyDeviceToHost),
        "cudaMemcpy from CUDA shared memory");
  }

  absl::Status Write(size_t offset, const void* host, size_t bytes) override {
    absl::Status s = CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice");
    if (!s.ok()) return s;
    return CudaStatus(
        cudaMemcpy(base_ + offset, host, bytes, cudaMemcpyHostToDevice),
        "cudaMemcpy to CUDA shared memory");
  }

 private:
  const int ordinal_;
  char* const base_;
  const size_t size_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SharedDeviceMemory>> OpenCudaIpcMemory(
    int ordinal, const std::string& handle, size_t byte_size) {
  cudaIpcMemHandle_t ipc{};
  if (handle.size() != sizeof(ipc)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a CUDA IPC handle is ", sizeof(ipc), " bytes, not ", handle.size()));
  }
  std::memcpy(&ipc, handle.data(), sizeof(ipc));
  absl::Status s = CudaStatus(cudaSetDevice(ordinal), "cudaSetDevice");
  void* base = nullptr;
  if (s.ok()) {
    s = CudaStatus(
        cudaIpcOpenMemHandle(&base, ipc, cudaIpcMemLazyEnablePeerAccess),
        "cudaIpcOpenMemHandle");
  }
  if (!s.ok()) return absl::InvalidArgumentError(s.message());
  return std::make_unique<CudaIpcMemory>(ordinal, static_cast<char*>(base),
                                         byte_size);
}

}  // namespace coalesce
