// Gemm: Y = alpha * op(A) * op(B) + beta * C, with C unidirectionally
// broadcast to [M, N]. C is optional from opset 11. FusedGemm (internal
// domain) adds an activation (fused_activation_attr.h).
#include "kernels/cpu/gemm.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/op_registry.h"
#include "engine/ops/fused_activation_attr.h"
#include "engine/ops/register_ops.h"
#include "kernels/cpu/fused_activation.h"

namespace coalesce {
namespace {

class GemmOp : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpNode& node) {
    auto op = std::make_unique<GemmOp>();
    absl::StatusOr<float> alpha = node.GetFloat("alpha", 1.0f);
    absl::StatusOr<float> beta = node.GetFloat("beta", 1.0f);
    absl::StatusOr<int64_t> trans_a = node.GetInt("transA", 0);
    absl::StatusOr<int64_t> trans_b = node.GetInt("transB", 0);
    for (const absl::Status& s :
         {alpha.status(), beta.status(), trans_a.status(), trans_b.status()}) {
      if (!s.ok()) return s;
    }
    op->alpha_ = *alpha;
    op->beta_ = *beta;
    op->trans_a_ = *trans_a != 0;
    op->trans_b_ = *trans_b != 0;
    absl::StatusOr<kernels::FusedActivation> act = ParseFusedActivation(node);
    if (!act.ok()) return act.status();
    op->activation_ = *act;
    return op;
  }

  absl::Status Infer(absl::Span<const TensorInfo> in,
                     absl::Span<TensorInfo> out) const override {
    for (int i : {0, 1}) {
      if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
        return s;
      if (in[i].shape.size() != 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(i == 0 ? "A" : "B", " must be 2-D, got ",
                         ShapeToString(in[i].shape)));
      }
    }
    const auto [m, k] = Dims(in[0].shape, trans_a_);
    const auto [k_b, n] = Dims(in[1].shape, trans_b_);
    if (k != k_b) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inner dimensions differ: A ", ShapeToString(in[0].shape),
          " has K=", k, ", B ", ShapeToString(in[1].shape), " has K=", k_b));
    }
    if (HasC(in)) {
      if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
        return s;
      const auto [rows, cols] = CDims(in[2].shape);
      if (in[2].shape.size() > 2 || (rows != 1 && rows != m) ||
          (cols != 1 && cols != n)) {
        return absl::InvalidArgumentError(
            absl::StrCat("C ", ShapeToString(in[2].shape),
                         " does not broadcast to [", m, ",", n, "]"));
      }
    }
    out[0].dtype = DataType::kFp32;
    out[0].shape = {m, n};
    return absl::OkStatus();
  }

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const auto [m, k] = Dims(*in[0].shape, trans_a_);
    const int64_t n = (*out[0].shape)[1];
    float beta = 0.0f;
    if (in.size() > 2 && in[2].present() && beta_ != 0.0f) {
      const auto [rows, cols] = CDims(*in[2].shape);
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
  // C as rows x cols: a scalar is 1x1, a vector 1xN.
  static std::pair<int64_t, int64_t> CDims(const Shape& s) {
    if (s.empty()) return {1, 1};
    if (s.size() == 1) return {1, s[0]};
    return {s[0], s[1]};
  }
  static bool HasC(absl::Span<const TensorInfo> in) {
    return in.size() > 2 && in[2].present();
  }

  float alpha_ = 1.0f, beta_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
  kernels::FusedActivation activation_;
};

}  // namespace

void RegisterGemmOp(OpRegistry& registry) {
  registry.Register("Gemm", FactoryOf<GemmOp>());
  registry.RegisterInternal("FusedGemm", FactoryOf<GemmOp>());
}

}  // namespace coalesce
