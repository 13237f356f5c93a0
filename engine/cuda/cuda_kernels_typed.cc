// CudaKernels' typed primitives (cuda_kernels_impl.h): elementwise
// arithmetic, comparisons and logic on typed tensors, Where, Cast,
// Quantize/Dequantize, CumSum and ArgMax.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/cuda/cuda_kernels_impl.h"
#include "engine/device/kernel_args.h"
#include "engine/device/kernel_checks.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/quantize.h"
#include "kernels/cuda/typed.h"

namespace coalesce {

namespace kc = kernels::cuda;

absl::Status CudaKernels::Typed(DeviceStream& stream, const TypedArgs& a) {
  kc::ElementType element;
  kc::TypedIndexer ix;
  return EnqueueChecked(
      CheckTyped(a, &element, &ix),
      [&](int64_t n) {
        return kc::LaunchTyped(ToKernel(a.op), element, ix, a.a, a.b, a.y, n,
                               CudaStreamOf(stream));
      },
      "typed elementwise kernel");
}

absl::Status CudaKernels::Where(DeviceStream& stream, const WhereArgs& a) {
  kc::TypedIndexer ix;
  return EnqueueChecked(
      CheckWhere(a, &ix),
      [&](int64_t n) {
        return kc::LaunchWhere(ix, static_cast<const uint8_t*>(a.cond), a.x,
                               a.z, a.element_bytes, a.y, n,
                               CudaStreamOf(stream));
      },
      "where kernel");
}

absl::Status CudaKernels::Cast(DeviceStream& stream, const CastArgs& a) {
  kc::ElementType from, to;
  return EnqueueChecked(
      CheckCast(a, &from, &to),
      [&] {
        return kc::LaunchCast(from, a.x, to, a.y, a.count,
                              CudaStreamOf(stream));
      },
      "cast kernel");
}

absl::Status CudaKernels::Quantize(DeviceStream& stream,
                                   const QuantizeArgs& a) {
  kc::QuantType type;
  return EnqueueChecked(
      CheckQuantize(a, &type),
      [&] {
        return kc::LaunchQuantize(a.quantize, type, a.x, a.scale, a.zero_point,
                                  a.y, a.outer, a.channels, a.inner,
                                  CudaStreamOf(stream));
      },
      "quantize kernel");
}

absl::Status CudaKernels::CumSum(DeviceStream& stream, const CumSumArgs& a) {
  kc::ElementType element;
  return EnqueueChecked(
      CheckArithmetic(a.type, "CumSum", &element),
      [&] {
        return kc::LaunchCumSum(element, a.x, a.y, a.outer, a.n, a.inner,
                                a.exclusive, a.reverse, CudaStreamOf(stream));
      },
      "CumSum kernel");
}

absl::Status CudaKernels::ArgMax(DeviceStream& stream, const ArgMaxArgs& a) {
  kc::ElementType element;
  return EnqueueChecked(
      CheckArithmetic(a.type, "ArgMax", &element),
      [&] {
        return kc::LaunchArgMax(element, a.x, a.y, a.outer, a.n, a.inner,
                                a.select_last, CudaStreamOf(stream));
      },
      "ArgMax kernel");
}

}  // namespace coalesce
