// CudaMemory: device memory from cudaMalloc that frees itself with cudaFree
// (which synchronizes the device: free only what no enqueued work or
// captured graph still reads). REQUIRES: the allocating device is current
// when it is freed.
#ifndef COALESCE_ENGINE_CUDA_CUDA_MEMORY_H_
#define COALESCE_ENGINE_CUDA_CUDA_MEMORY_H_

#include <cuda_runtime_api.h>

#include <memory>

namespace coalesce {

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using CudaMemory = std::unique_ptr<void, CudaFree>;

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_CUDA_MEMORY_H_
