// CudaKernels' data movement primitives (cuda_kernels_impl.h): Transpose,
// Broadcast (Expand), StridedCopy, Pad, Resize, Copy2D, and the gathers
// (Gather, GatherND, GatherElements).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/cuda/cuda_kernels_impl.h"
#include "engine/device/kernel_args.h"
#include "engine/device/kernel_checks.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/pad.h"
#include "kernels/cuda/resize.h"
#include "kernels/cuda/transpose.h"

namespace coalesce {

namespace kc = kernels::cuda;

absl::Status CudaKernels::Transpose(DeviceStream& stream,
                                    const TransposeArgs& a) {
  kc::TransposeIndexer ix;
  return EnqueueChecked(
      CheckTranspose(a, &ix),
      [&](int64_t n) {
        return kc::LaunchTranspose(ix, a.x, a.y, n, a.element_bytes,
                                   CudaStreamOf(stream));
      },
      "transpose kernel");
}

absl::Status CudaKernels::Broadcast(DeviceStream& stream,
                                    const BroadcastArgs& a) {
  kc::TransposeIndexer ix;
  const absl::StatusOr<int64_t> n = CheckBroadcast(a, &ix);
  if (n.ok() && *n == 0) return absl::OkStatus();
  return EnqueueChecked(
      n,
      [&](int64_t count) {
        return kc::LaunchTranspose(ix, a.x, a.y, count, a.element_bytes,
                                   CudaStreamOf(stream));
      },
      "broadcast kernel");
}

absl::Status CudaKernels::StridedCopy(DeviceStream& stream,
                                      const StridedCopyArgs& a) {
  kc::TransposeIndexer ix;
  const absl::StatusOr<int64_t> n = CheckStridedCopy(a, &ix);
  if (n.ok() && *n == 0) return absl::OkStatus();
  return EnqueueChecked(
      n,
      [&](int64_t count) {
        const char* x = static_cast<const char*>(a.x);
        return kc::LaunchTranspose(ix, x + a.offset * a.element_bytes, a.y,
                                   count, a.element_bytes,
                                   CudaStreamOf(stream));
      },
      "strided copy kernel");
}

absl::Status CudaKernels::Pad(DeviceStream& stream, const PadArgs& a) {
  kc::PadIndexer ix;
  return EnqueueChecked(
      CheckPad(a, &ix),
      [&](int64_t n) {
        return kc::LaunchPad(ix, a.x, a.fill, a.element_bytes, a.y, n,
                             CudaStreamOf(stream));
      },
      "pad kernel");
}

absl::Status CudaKernels::Resize(DeviceStream& stream, const ResizeArgs& a) {
  kc::ResizeIndexer ix;
  return EnqueueChecked(
      CheckResize(a, &ix),
      [&](int64_t n) {
        return kc::LaunchResize(ix, a.x, a.y, n, CudaStreamOf(stream));
      },
      "resize kernel");
}

absl::Status CudaKernels::Copy2D(DeviceStream& stream, const Copy2DArgs& a) {
  if (a.rows == 0 || a.row_bytes == 0) return absl::OkStatus();
  return Enqueue(
      [&] {
        return cudaMemcpy2DAsync(a.dst, a.dst_pitch, a.src, a.src_pitch,
                                 a.row_bytes, a.rows, cudaMemcpyDeviceToDevice,
                                 CudaStreamOf(stream));
      },
      "cudaMemcpy2DAsync");
}

absl::Status CudaKernels::Gather(DeviceStream& stream, const GatherArgs& a) {
  return Enqueue(
      [&] {
        return kc::LaunchGather(a.data, a.element_bytes, a.outer, a.axis_dim,
                                a.inner, a.indices, a.indices_int64,
                                a.num_indices, a.y, CudaStreamOf(stream));
      },
      "gather kernel");
}

absl::Status CudaKernels::GatherNd(DeviceStream& stream,
                                   const GatherNdArgs& a) {
  kc::GatherNdIndexer ix;
  const int64_t n = a.batches * a.rows_per_batch * a.slice;
  return EnqueueChecked(
      CheckGatherNd(a, &ix),
      [&] {
        return kc::LaunchGatherNd(ix, a.data, a.element_bytes, a.indices, a.y,
                                  n, CudaStreamOf(stream));
      },
      "GatherND kernel");
}

absl::Status CudaKernels::GatherElements(DeviceStream& stream,
                                         const GatherElementsArgs& a) {
  kc::GatherElementsIndexer ix;
  int64_t n = 1;
  for (int64_t d : a.indices_shape) n *= d;
  return EnqueueChecked(
      CheckGatherElements(a, &ix),
      [&] {
        return kc::LaunchGatherElements(ix, a.data, a.element_bytes, a.indices,
                                        a.indices_int64, a.y, n,
                                        CudaStreamOf(stream));
      },
      "GatherElements kernel");
}

}  // namespace coalesce
