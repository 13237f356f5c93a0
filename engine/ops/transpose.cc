// Transpose: permutes axes by `perm` (default: reversed). Any element type.
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

class TransposeOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    absl::StatusOr<std::vector<int64_t>> perm = node.GetInts("perm");
    if (!perm.ok()) return perm.status();
    return std::make_unique<TransposeOp>(*std::move(perm));
  }

  explicit TransposeOp(std::vector<int64_t> perm) : perm_(std::move(perm)) {}

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    if (in.empty() || !in[0].present()) {
      return absl::InvalidArgumentError("input 0 is required");
    }
    const Shape& s = in[0].shape;
    const std::vector<int64_t> perm = PermFor(s.size());
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted.size() != s.size() || sorted[i] != static_cast<int64_t>(i)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "perm is not a permutation of the axes of ", ShapeToString(s)));
      }
    }
    out[0].dtype = in[0].dtype;
    out[0].shape.resize(s.size());
    for (size_t i = 0; i < s.size(); ++i) out[0].shape[i] = s[perm[i]];
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const Shape& s = *in[0].shape;
    kernels::Transpose(in[0].data, s, PermFor(s.size()),
                       StorageByteSize(in[0].dtype), out[0].data);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    std::vector<int64_t> perm = PermFor(in[0].shape.size());
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
  std::vector<int64_t> PermFor(size_t rank) const {
    if (!perm_.empty()) return perm_;
    std::vector<int64_t> perm(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
    return perm;
  }

  std::vector<int64_t> perm_;
};

}  // namespace

void RegisterTransposeOp(OpRegistry& registry) {
  registry.Register("Transpose", FactoryOf<TransposeOp>());
}

}  // namespace coalesce
