#include "kernels/cuda/launch_util.cuh"
#include "kernels/cuda/typed.h"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = kLoopThreads;

__global__ void TypedKernel(TypedOp op, ElementType type, TypedIndexer ix,
                            const void* a, const void* b, void* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    TypedElement(op, type, ix, a, b, y, i);
  }
}

template <typename T>
__global__ void WhereKernel(TypedIndexer ix, const uint8_t* cond, const T* x,
                            const T* z, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    WhereElement(ix, cond, x, z, y, i);
  }
}

__global__ void CastKernel(ElementType from, const void* x, ElementType to,
                           void* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    CastElement(from, x, to, y, i);
  }
}

template <typename T>
cudaError_t Where(const TypedIndexer& ix, const uint8_t* cond, const void* x,
                  const void* z, void* y, int64_t n, cudaStream_t stream) {
  WhereKernel<T><<<LoopBlocks(n), kThreads, 0, stream>>>(
      ix, cond, static_cast<const T*>(x), static_cast<const T*>(z),
      static_cast<T*>(y), n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchTyped(TypedOp op, ElementType type, const TypedIndexer& ix,
                        const void* a, const void* b, void* y, int64_t n,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  TypedKernel<<<LoopBlocks(n), kThreads, 0, stream>>>(op, type, ix, a, b, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchWhere(const TypedIndexer& ix, const uint8_t* cond,
                        const void* x, const void* z, size_t element_bytes,
                        void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1:
      return Where<uint8_t>(ix, cond, x, z, y, n, stream);
    case 2:
      return Where<uint16_t>(ix, cond, x, z, y, n, stream);
    case 4:
      return Where<uint32_t>(ix, cond, x, z, y, n, stream);
    case 8:
      return Where<uint64_t>(ix, cond, x, z, y, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchCast(ElementType from, const void* x, ElementType to, void* y,
                       int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CastKernel<<<LoopBlocks(n), kThreads, 0, stream>>>(from, x, to, y, n);
  return cudaGetLastError();
}

}  // namespace coalesce::kernels::cuda
