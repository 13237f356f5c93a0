#include <stdint.h>

#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch_util.cuh"

namespace coalesce::kernels::cuda {
namespace {

// Four bfloat16 elements, one 8-byte load or store.
struct alignas(8) BFloat16x4 {
  BFloat16Bits x, y, z, w;
};

// Four elements of T in one aligned load or store: float4 (16 bytes),
// ushort4 (8 bytes of float16 bits) or BFloat16x4.
template <typename T>
struct Vector4;
template <>
struct Vector4<float> {
  using Type = float4;
};
template <>
struct Vector4<uint16_t> {
  using Type = ushort4;
};
template <>
struct Vector4<BFloat16Bits> {
  using Type = BFloat16x4;
};

template <typename T>
constexpr uintptr_t kVector4Bytes = sizeof(typename Vector4<T>::Type);

// y[i] = f(x[i]): the first `vectors` groups of four elements by vector
// loads and stores (x and y aligned for them), then the rest one by one.
// x and y may be the same array (no __restrict__): each group or element is
// read before it is written, by the thread that writes it.
template <typename X, typename Y>
__global__ void ActivationKernel(ActivationFn f, const X* x, Y* y, int64_t n,
                                 int64_t vectors) {
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const int64_t step = int64_t{gridDim.x} * blockDim.x;
  using XV = typename Vector4<X>::Type;
  using YV = typename Vector4<Y>::Type;
  for (int64_t v = first; v < vectors; v += step) {
    const XV in = reinterpret_cast<const XV*>(x)[v];
    YV out;
    out.x =
        FromFloat<Y>(ApplyActivation(f.act, ToFloat(in.x), f.alpha, f.beta));
    out.y =
        FromFloat<Y>(ApplyActivation(f.act, ToFloat(in.y), f.alpha, f.beta));
    out.z =
        FromFloat<Y>(ApplyActivation(f.act, ToFloat(in.z), f.alpha, f.beta));
    out.w =
        FromFloat<Y>(ApplyActivation(f.act, ToFloat(in.w), f.alpha, f.beta));
    reinterpret_cast<YV*>(y)[v] = out;
  }
  for (int64_t i = vectors * 4 + first; i < n; i += step) {
    y[i] = FromFloat<Y>(ApplyActivation(f.act, ToFloat(x[i]), f.alpha, f.beta));
  }
}

// `identity`: BroadcastIsIdentity(ix), element i of a, b and y alike.
template <typename A, typename B, typename Y>
__global__ void BinaryKernel(BinaryOp op, BroadcastIndexer ix, bool identity,
                             const A* a, const B* b, Y* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t ai = i, bi = i;
    if (!identity) BroadcastOffsets(ix, i, &ai, &bi);
    y[i] = FromFloat<Y>(ApplyBinary(op, ToFloat(a[ai]), ToFloat(b[bi])));
  }
}

bool Aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace

cudaError_t LaunchActivation(const ActivationFn& f, FloatSource x,
                             FloatTarget y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return WithFloatTypes(
      [&](auto x_tag, auto y_tag) {
        using X = decltype(x_tag);
        using Y = decltype(y_tag);
        const bool vector = Aligned(x.data, kVector4Bytes<X>) &&
                            Aligned(y.data, kVector4Bytes<Y>);
        const int64_t vectors = vector ? n / 4 : 0;
        // With vectors, fewer than four elements are left for the loop.
        ActivationKernel<X, Y>
            <<<LoopBlocks(vectors > 0 ? vectors : n), kLoopThreads, 0,
               stream>>>(f, static_cast<const X*>(x.data),
                         static_cast<Y*>(y.data), n, vectors);
        return cudaGetLastError();
      },
      x.storage, y.storage);
}

cudaError_t LaunchBinary(BinaryOp op, const BroadcastIndexer& ix, FloatSource a,
                         FloatSource b, FloatTarget y, int64_t n,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const bool identity = BroadcastIsIdentity(ix);
  return WithFloatTypes(
      [&](auto a_tag, auto b_tag, auto y_tag) {
        using A = decltype(a_tag);
        using B = decltype(b_tag);
        using Y = decltype(y_tag);
        BinaryKernel<A, B, Y><<<LoopBlocks(n), kLoopThreads, 0, stream>>>(
            op, ix, identity, static_cast<const A*>(a.data),
            static_cast<const B*>(b.data), static_cast<Y*>(y.data), n);
        return cudaGetLastError();
      },
      a.storage, b.storage, y.storage);
}

}  // namespace coalesce::kernels::cuda
