// The index mapping of the CUDA Pad kernel (pad.cu): for each element of
// the output, the input element it copies, or none (the constant). Modes
// as ONNX Pad: constant, edge (the nearest element) and reflect (mirrored
// without repeating the edge). Negative pads crop. Host and device;
// unit-tested on the host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_PAD_MATH_H_
#define COALESCE_KERNELS_CUDA_PAD_MATH_H_

#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

inline constexpr int kMaxPadRank = 8;

enum class PadKind { kConstant, kEdge, kReflect };

struct PadIndexer {
  int rank = 0;
  PadKind kind = PadKind::kConstant;
  int64_t out_dims[kMaxPadRank] = {};
  int64_t in_dims[kMaxPadRank] = {};
  int64_t begin[kMaxPadRank] = {};  // pads before each axis (negative: crop)
};

// The coordinate along an axis of n that padded coordinate c reads; -1 for
// the constant. REQUIRES: n >= 1 unless kind is kConstant.
COALESCE_HD int64_t PadCoordinate(PadKind kind, int64_t c, int64_t n) {
  if (c >= 0 && c < n) return c;
  if (kind == PadKind::kConstant) return -1;
  if (kind == PadKind::kEdge || n == 1) return c < 0 ? 0 : n - 1;
  const int64_t period = 2 * (n - 1);  // reflect: ... 2 1 [0 1 2 3] 2 1 0 1 ...
  int64_t r = c % period;
  if (r < 0) r += period;
  return r < n ? r : period - r;
}

// The input offset output element `i` copies, or -1 for the constant.
COALESCE_HD int64_t PadSource(const PadIndexer& ix, int64_t i) {
  int64_t offset = 0, stride = 1;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t coord = i % ix.out_dims[d];
    i /= ix.out_dims[d];
    const int64_t c =
        PadCoordinate(ix.kind, coord - ix.begin[d], ix.in_dims[d]);
    if (c < 0) return -1;
    offset += c * stride;
    stride *= ix.in_dims[d];
  }
  return offset;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_PAD_MATH_H_
