// Gemm and FusedGemm on the CPU (engine/schema/gemm_schema.h says what they
// compute).
#include "kernels/cpu/gemm.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/fused_activation_attr.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/gemm_schema.h"
#include "kernels/cpu/fused_activation.h"

namespace coalesce {
namespace {

// Attributes and inference: engine/schema/gemm_schema.h.
class GemmOp : public SchemaKernel {
 public:
  GemmOp(const OpNode& node, const GemmAttrs& attrs)
      : SchemaKernel(node),
        alpha_(attrs.alpha),
        beta_(attrs.beta),
        trans_a_(attrs.trans_a),
        trans_b_(attrs.trans_b),
        activation_(ToKernelActivation(attrs.activation)) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const auto [m, k] = Dims(*in[0].shape, trans_a_);
    const int64_t n = (*out[0].shape)[1];
    float beta = 0.0f;
    if (in.size() > 2 && in[2].present() && beta_ != 0.0f) {
      const auto [rows, cols] = GemmBiasDims(*in[2].shape);
      kernels::BroadcastToMatrix(in[2].as<float>(), rows, cols, m, n,
                                 out[0].as<float>());
      beta = beta_;
    }
    kernels::GemmParams params{.trans_a = trans_a_,
                               .trans_b = trans_b_,
                               .m = m,
                               .n = n,
                               .k = k,
                               .alpha = alpha_,
                               .beta = beta};
    absl::Status s = kernels::Sgemm(params, in[0].as<float>(),
                                    in[1].as<float>(), out[0].as<float>());
    if (s.ok())
      kernels::ApplyFusedActivation(activation_, out[0].as<float>(), m * n);
    return s;
  }

 private:
  static std::pair<int64_t, int64_t> Dims(const Shape& s, bool transposed) {
    return transposed ? std::make_pair(s[1], s[0]) : std::make_pair(s[0], s[1]);
  }
  const float alpha_, beta_;
  const bool trans_a_, trans_b_;
  const kernels::FusedActivation activation_;
};

}  // namespace

void RegisterGemmOp(OpRegistry& registry) {
  registry.Register("Gemm", SchemaFactoryOf<GemmOp, GemmAttrs>());
  registry.RegisterInternal("FusedGemm", SchemaFactoryOf<GemmOp, GemmAttrs>());
}

}  // namespace coalesce
