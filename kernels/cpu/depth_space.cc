#include "kernels/cpu/depth_space.h"

#include <cstring>

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

// The depth-side channel of spatial-side channel k at tile offset (i, j).
int64_t DepthChannel(const DepthSpaceShape& s, DepthSpaceMode mode, int64_t k,
                     int64_t i, int64_t j) {
  const int64_t space_channels = s.c / (s.block * s.block);
  if (mode == DepthSpaceMode::kDcr)
    return (i * s.block + j) * space_channels + k;
  return (k * s.block + i) * s.block + j;
}

// Output rows are those of the spatial side: [n, c / block^2, h * block].
template <typename T>
void DepthToSpaceTyped(const T* x, const DepthSpaceShape& s,
                       DepthSpaceMode mode, T* y) {
  const int64_t b = s.block, space_c = s.c / (b * b);
  const int64_t out_h = s.h * b, out_w = s.w * b;
  const int64_t rows = s.n * space_c * out_h;
#pragma omp parallel for if (rows > 1 && rows * out_w >= kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t oh = r % out_h, k = (r / out_h) % space_c;
    const int64_t batch = r / (out_h * space_c);
    const int64_t h = oh / b, i = oh % b;
    T* out = y + r * out_w;
    for (int64_t j = 0; j < b; ++j) {
      const int64_t channel = DepthChannel(s, mode, k, i, j);
      const T* in = x + ((batch * s.c + channel) * s.h + h) * s.w;
      for (int64_t w = 0; w < s.w; ++w) out[w * b + j] = in[w];
    }
  }
}

// Output rows are those of the depth side: [n, c, h].
template <typename T>
void SpaceToDepthTyped(const T* x, const DepthSpaceShape& s,
                       DepthSpaceMode mode, T* y) {
  const int64_t b = s.block, space_c = s.c / (b * b);
  const int64_t in_h = s.h * b, in_w = s.w * b;
  const int64_t rows = s.n * space_c * in_h;  // one per input row
#pragma omp parallel for if (rows > 1 && rows * in_w >= kParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ih = r % in_h, k = (r / in_h) % space_c;
    const int64_t batch = r / (in_h * space_c);
    const int64_t h = ih / b, i = ih % b;
    const T* in = x + r * in_w;
    for (int64_t j = 0; j < b; ++j) {
      const int64_t channel = DepthChannel(s, mode, k, i, j);
      T* out = y + ((batch * s.c + channel) * s.h + h) * s.w;
      for (int64_t w = 0; w < s.w; ++w) out[w] = in[w * b + j];
    }
  }
}

// A 16-byte element (the engine's string handles), moved whole.
struct Element16 {
  uint64_t lo, hi;
};

template <typename Fn>
void ByElementSize(size_t element_bytes, Fn&& fn) {
  switch (element_bytes) {
    case 1:
      fn(uint8_t{});
      break;
    case 2:
      fn(uint16_t{});
      break;
    case 4:
      fn(uint32_t{});
      break;
    case 16:
      fn(Element16{});
      break;
    default:
      fn(uint64_t{});
      break;
  }
}

}  // namespace

void DepthToSpace(const void* x, const DepthSpaceShape& depth,
                  DepthSpaceMode mode, size_t element_bytes, void* y) {
  ByElementSize(element_bytes, [&](auto zero) {
    using T = decltype(zero);
    DepthToSpaceTyped(static_cast<const T*>(x), depth, mode,
                      static_cast<T*>(y));
  });
}

void SpaceToDepth(const void* x, const DepthSpaceShape& depth,
                  DepthSpaceMode mode, size_t element_bytes, void* y) {
  ByElementSize(element_bytes, [&](auto zero) {
    using T = decltype(zero);
    SpaceToDepthTyped(static_cast<const T*>(x), depth, mode,
                      static_cast<T*>(y));
  });
}

}  // namespace coalesce::kernels
