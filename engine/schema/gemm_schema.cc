#include "engine/schema/gemm_schema.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

absl::StatusOr<GemmAttrs> ResolveGemm(const SchemaNode& node) {
  const NodeAttributes& a = node.attributes;
  absl::StatusOr<float> alpha = a.GetFloat("alpha", 1.0f);
  absl::StatusOr<float> beta = a.GetFloat("beta", 1.0f);
  absl::StatusOr<int64_t> trans_a = a.GetInt("transA", 0);
  absl::StatusOr<int64_t> trans_b = a.GetInt("transB", 0);
  absl::StatusOr<FusedActivationAttr> act = ResolveFusedActivation(a);
  for (const absl::Status& s : {alpha.status(), beta.status(), trans_a.status(),
                                trans_b.status(), act.status()}) {
    if (!s.ok()) return s;
  }
  return GemmAttrs{*alpha, *beta, *trans_a != 0, *trans_b != 0, *act};
}

std::pair<int64_t, int64_t> Dims(const Shape& s, bool transposed) {
  return transposed ? std::make_pair(s[1], s[0]) : std::make_pair(s[0], s[1]);
}

absl::Status InferGemm(const GemmAttrs& attrs, absl::Span<const TensorInfo> in,
                       absl::Span<TensorInfo> out) {
  for (int i : {0, 1}) {
    if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
      return s;
    if (in[i].shape.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(i == 0 ? "A" : "B", " must be 2-D, got ",
                       ShapeToString(in[i].shape)));
    }
  }
  const auto [m, k] = Dims(in[0].shape, attrs.trans_a);
  const auto [k_b, n] = Dims(in[1].shape, attrs.trans_b);
  if (k != k_b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions differ: A ", ShapeToString(in[0].shape), " has K=", k,
        ", B ", ShapeToString(in[1].shape), " has K=", k_b));
  }
  if (in.size() > 2 && in[2].present()) {
    if (absl::Status s = ExpectInputType(in, 2, DataType::kFp32); !s.ok())
      return s;
    const auto [rows, cols] = GemmBiasDims(in[2].shape);
    if (in[2].shape.size() > 2 || (rows != 1 && rows != m) ||
        (cols != 1 && cols != n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("C ", ShapeToString(in[2].shape),
                       " does not broadcast to [", m, ",", n, "]"));
    }
  }
  out[0] = {DataType::kFp32, {m, n}, nullptr};
  return absl::OkStatus();
}

absl::StatusOr<MatMulAttrs> ResolveMatMul(const SchemaNode& node) {
  absl::StatusOr<FusedActivationAttr> act =
      ResolveFusedActivation(node.attributes);
  if (!act.ok()) return act.status();
  return MatMulAttrs{*act};
}

}  // namespace

void RegisterGemmSchemas(SchemaRegistry& registry) {
  auto gemm =
      std::make_shared<FunctionSchema<GemmAttrs>>(&ResolveGemm, &InferGemm);
  registry.Register("Gemm", gemm);
  registry.RegisterInternal("FusedGemm", gemm);
  auto matmul =
      std::make_shared<FunctionSchema<MatMulAttrs>>(&ResolveMatMul, nullptr);
  registry.Register("MatMul", matmul);
  registry.RegisterInternal("FusedMatMul", matmul);
}

}  // namespace coalesce
