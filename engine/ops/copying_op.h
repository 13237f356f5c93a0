// CopyingOp: base of the ops that keep a tensor's bytes and change only its
// shape (Identity, Flatten, Reshape, Squeeze, Unsqueeze). Run copies input 0
// to output 0, nothing when the plan gave them one block
// (OpKernel::CopiesInputBytes); subclasses give Infer.
#ifndef COALESCE_ENGINE_OPS_COPYING_OP_H_
#define COALESCE_ENGINE_OPS_COPYING_OP_H_

#include "absl/status/status.h"
#include "engine/op_kernel.h"
#include "engine/string_ref.h"
#include "kernels/cpu/copy.h"

namespace coalesce {

class CopyingOp : public OpKernel {
 public:
  bool CopiesInputBytes() const override { return true; }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    kernels::CopyBytes(
        in[0].data, DimProduct(s, 0, s.size()) * StorageByteSize(in[0].dtype),
        out[0].data);
    return absl::OkStatus();
  }

 protected:
  static absl::Status RequireInput(absl::Span<const TensorInfo> in) {
    if (in.empty() || !in[0].present()) {
      return absl::InvalidArgumentError("input 0 is required");
    }
    return absl::OkStatus();
  }
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_COPYING_OP_H_
