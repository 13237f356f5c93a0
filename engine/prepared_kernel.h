// PreparedKernel: the work an OpKernel does once per execution plan, when the
// concrete shapes are known: choosing an algorithm, creating a oneDNN
// primitive, packing constant weights into the layout the algorithm reads.
//
// OpKernel::Prepare creates one per plan and node; the plan owns it. A plan
// runs one Execute at a time (ExecutionPlan's contract), so Run may reuse the
// objects it holds without locking; anything it shares with other plans (such
// as packed weights cached on the OpKernel) must be immutable or locked.
#ifndef COALESCE_ENGINE_PREPARED_KERNEL_H_
#define COALESCE_ENGINE_PREPARED_KERNEL_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/op_kernel.h"

namespace coalesce {

class PreparedKernel {
 public:
  virtual ~PreparedKernel() = default;

  // Bytes of scratch memory Run needs. The plan reserves them in its arena;
  // they hold garbage on entry and are reused by other nodes after Run.
  virtual size_t scratch_bytes() const { return 0; }

  // The input output 0 may be written over, or -1. The plan then may give
  // output 0 that input's memory: when the input is an intermediate value
  // this node reads last, through no other of its inputs, and of the same
  // byte size. Run must be right either way (compare the addresses).
  virtual int in_place_input() const { return -1; }

  // Computes the outputs, as OpKernel::Run does, for the shapes the kernel was
  // prepared for. `scratch` is 64-byte aligned and holds scratch_bytes().
  virtual absl::Status Run(absl::Span<const ConstTensorView> inputs,
                           absl::Span<const TensorView> outputs,
                           char* scratch) = 0;
};

// Base for OpKernels that always return a PreparedKernel from Prepare (Conv,
// ConvTranspose): the plain Run is never called by a plan.
class PreparedOnlyKernel : public OpKernel {
 public:
  absl::Status Run(absl::Span<const ConstTensorView> inputs,
                   absl::Span<const TensorView> outputs) const final {
    return absl::InternalError("this operator runs only as a prepared kernel");
  }
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_PREPARED_KERNEL_H_
