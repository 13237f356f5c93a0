// TransposePrimitive: a float32 Transpose as a oneDNN reorder, created once
// per shape and run many times. The output is described to oneDNN as the
// input's dims with permuted strides, so any permutation is one reorder;
// oneDNN's JIT reorders move NCHW <-> NHWC (the transposes the channels-last
// layout pass leaves) several times faster than kernels/cpu/transpose.h.
// One Run at a time per primitive; different primitives are independent.
#ifndef COALESCE_KERNELS_CPU_TRANSPOSE_PRIMITIVE_H_
#define COALESCE_KERNELS_CPU_TRANSPOSE_PRIMITIVE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coalesce::kernels {

class TransposePrimitive {
 public:
  // out = in with axis i of out being axis perm[i] of in (ONNX Transpose).
  // InvalidArgument for a rank outside 1..6, a perm that is not one, or a
  // reorder oneDNN does not offer (the caller then uses Transpose).
  static absl::StatusOr<std::unique_ptr<TransposePrimitive>> Create(
      const std::vector<int64_t>& in_dims, const std::vector<int64_t>& perm);
  ~TransposePrimitive();

  // REQUIRES: `in` and `out` hold the tensor Create was given.
  absl::Status Run(const float* in, float* out);

  struct Impl;

 private:
  explicit TransposePrimitive(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_TRANSPOSE_PRIMITIVE_H_
