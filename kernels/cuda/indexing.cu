#include "kernels/cuda/indexing.h"
#include "kernels/cuda/launch_util.cuh"

namespace coalesce::kernels::cuda {
namespace {

constexpr int kThreads = kLoopThreads;

#define COALESCE_GRID_LOOP(i, n)                                            \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

template <typename T>
__global__ void GatherNdKernel(GatherNdIndexer ix, const T* data,
                               const int64_t* indices, T* y, int64_t n) {
  COALESCE_GRID_LOOP(i, n) {
    const int64_t src = GatherNdSource(ix, indices, i);
    y[i] = src < 0 ? T{0} : data[src];
  }
}

template <typename T>
__global__ void GatherElementsKernel(GatherElementsIndexer ix, const T* data,
                                     const void* indices, bool indices_int64,
                                     T* y, int64_t n) {
  COALESCE_GRID_LOOP(i, n) {
    const int64_t index = indices_int64
                              ? static_cast<const int64_t*>(indices)[i]
                              : static_cast<const int32_t*>(indices)[i];
    const int64_t src = GatherElementsSource(ix, index, i);
    y[i] = src < 0 ? T{0} : data[src];
  }
}

template <typename T>
__global__ void CumSumKernel(const T* x, T* y, int64_t lines, int64_t n,
                             int64_t inner, bool exclusive, bool reverse) {
  COALESCE_GRID_LOOP(line, lines) {
    CumSumLine(x, y, line, n, inner, exclusive, reverse);
  }
}

template <typename T>
__global__ void ArgMaxKernel(const T* x, int64_t* y, int64_t lines, int64_t n,
                             int64_t inner, bool select_last) {
  COALESCE_GRID_LOOP(line, lines) {
    y[line] = ArgMaxLine(x, line, n, inner, select_last);
  }
}

#undef COALESCE_GRID_LOOP

// Calls launch(T{}) with T the unsigned type of `element_bytes` bytes.
template <typename Launch>
cudaError_t ForElementBytes(size_t element_bytes, Launch launch) {
  switch (element_bytes) {
    case 1:
      return launch(uint8_t{});
    case 2:
      return launch(uint16_t{});
    case 4:
      return launch(uint32_t{});
    case 8:
      return launch(uint64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// Calls launch(T{}) with T the arithmetic type of `type`.
template <typename Launch>
cudaError_t ForArithmetic(ElementType type, Launch launch) {
  switch (type) {
    case ElementType::kFloat:
      return launch(float{});
    case ElementType::kInt64:
      return launch(int64_t{});
    case ElementType::kInt32:
      return launch(int32_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t LaunchGatherNd(const GatherNdIndexer& ix, const void* data,
                           size_t element_bytes, const int64_t* indices,
                           void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return ForElementBytes(element_bytes, [&](auto tag) {
    using T = decltype(tag);
    GatherNdKernel<T><<<LoopBlocks(n), kThreads, 0, stream>>>(
        ix, static_cast<const T*>(data), indices, static_cast<T*>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchGatherElements(const GatherElementsIndexer& ix,
                                 const void* data, size_t element_bytes,
                                 const void* indices, bool indices_int64,
                                 void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return ForElementBytes(element_bytes, [&](auto tag) {
    using T = decltype(tag);
    GatherElementsKernel<T><<<LoopBlocks(n), kThreads, 0, stream>>>(
        ix, static_cast<const T*>(data), indices, indices_int64,
        static_cast<T*>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchCumSum(ElementType type, const void* x, void* y,
                         int64_t outer, int64_t n, int64_t inner,
                         bool exclusive, bool reverse, cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return cudaSuccess;
  return ForArithmetic(type, [&](auto tag) {
    using T = decltype(tag);
    CumSumKernel<T><<<LoopBlocks(lines), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), lines, n, inner,
        exclusive, reverse);
    return cudaGetLastError();
  });
}

cudaError_t LaunchArgMax(ElementType type, const void* x, int64_t* y,
                         int64_t outer, int64_t n, int64_t inner,
                         bool select_last, cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return cudaSuccess;
  return ForArithmetic(type, [&](auto tag) {
    using T = decltype(tag);
    ArgMaxKernel<T><<<LoopBlocks(lines), kThreads, 0, stream>>>(
        static_cast<const T*>(x), y, lines, n, inner, select_last);
    return cudaGetLastError();
  });
}

}  // namespace coalesce::kernels::cuda
