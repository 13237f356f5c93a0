// Transpose (engine/schema/tensor_schema.h) on the CPU.
// A plan resolves the default perm for its rank once; a float32 tensor of
// 32768 elements or more runs as a oneDNN reorder prepared per plan
// (kernels/cpu/transpose_primitive.h), where oneDNN offers one.
#include "kernels/cpu/transpose.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/tensor_schema.h"
#include "engine/string_ref.h"
#include "kernels/cpu/transpose_primitive.h"

namespace coalesce {
namespace {

// Transpose with the perm of one plan's rank.
class PreparedTranspose : public PreparedKernel {
 public:
  explicit PreparedTranspose(std::vector<int64_t> perm)
      : perm_(std::move(perm)) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    kernels::Transpose(in[0].data, *in[0].shape, perm_,
                       StorageByteSize(in[0].dtype), out[0].data);
    return absl::OkStatus();
  }

 private:
  std::vector<int64_t> perm_;
};

// A float32 transpose through a oneDNN reorder.
class PreparedReorderTranspose : public PreparedKernel {
 public:
  explicit PreparedReorderTranspose(
      std::unique_ptr<kernels::TransposePrimitive> primitive)
      : primitive_(std::move(primitive)) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    return primitive_->Run(in[0].as<float>(), out[0].as<float>());
  }

 private:
  std::unique_ptr<kernels::TransposePrimitive> primitive_;
};

// Below this, the generic kernel is as fast, and allocates nothing (a oneDNN
// execute makes a few small allocations per call).
constexpr int64_t kReorderMinElements = 32768;

class TransposeOp : public SchemaKernel {
 public:
  TransposeOp(const OpNode& node, const TransposeAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    kernels::Transpose(in[0].data, s, TransposePerm(attrs_, s.size()),
                       StorageByteSize(in[0].dtype), out[0].data);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    std::vector<int64_t> perm = TransposePerm(attrs_, in[0].shape.size());
    int64_t count = 1;
    for (int64_t d : in[0].shape) count *= d;
    if (in[0].dtype == DataType::kFp32 && count >= kReorderMinElements) {
      auto primitive = kernels::TransposePrimitive::Create(in[0].shape, perm);
      if (primitive.ok()) {
        return std::make_unique<PreparedReorderTranspose>(
            *std::move(primitive));
      }
    }
    return std::make_unique<PreparedTranspose>(std::move(perm));
  }

 private:
  const TransposeAttrs attrs_;
};

}  // namespace

void RegisterTransposeOp(OpRegistry& registry) {
  registry.Register("Transpose",
                    SchemaFactoryOf<TransposeOp, TransposeAttrs>());
}

}  // namespace coalesce
