#include "engine/schema/tensor_schema.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

absl::StatusOr<TransposeAttrs> ResolveTranspose(const SchemaNode& node) {
  absl::StatusOr<std::vector<int64_t>> perm = node.attributes.GetInts("perm");
  if (!perm.ok()) return perm.status();
  return TransposeAttrs{*std::move(perm)};
}

absl::Status InferTranspose(const TransposeAttrs& attrs,
                            absl::Span<const TensorInfo> in,
                            absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present()) {
    return absl::InvalidArgumentError("input 0 is required");
  }
  const Shape& s = in[0].shape;
  const std::vector<int64_t> perm = TransposePerm(attrs, s.size());
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

absl::StatusOr<ConcatAttrs> ResolveConcat(const SchemaNode& node) {
  if (!node.attributes.Has("axis")) {
    return absl::InvalidArgumentError("attribute 'axis' is required");
  }
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", 0);
  if (!axis.ok()) return axis.status();
  return ConcatAttrs{*axis};
}

absl::Status InferConcat(const ConcatAttrs& attrs,
                         absl::Span<const TensorInfo> in,
                         absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present()) {
    return absl::InvalidArgumentError("Concat needs at least one input");
  }
  const Shape& first = in[0].shape;
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, first.size());
  if (!axis.ok()) return axis.status();
  Shape shape = first;
  shape[*axis] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    bool fits = in[i].dtype == in[0].dtype && s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d) {
      fits = static_cast<int64_t>(d) == *axis || s[d] == first[d];
    }
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " ", ShapeToString(s), " does not fit input 0 ",
          ShapeToString(first), " on axis ", *axis));
    }
    if (__builtin_add_overflow(shape[*axis], s[*axis], &shape[*axis])) {
      return absl::InvalidArgumentError(
          absl::StrCat("the inputs' axis ", *axis, " sums beyond int64"));
    }
  }
  out[0].dtype = in[0].dtype;
  out[0].shape = std::move(shape);
  return absl::OkStatus();
}

absl::StatusOr<GatherAttrs> ResolveGather(const SchemaNode& node) {
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", 0);
  if (!axis.ok()) return axis.status();
  return GatherAttrs{*axis};
}

absl::Status InferGather(const GatherAttrs& attrs,
                         absl::Span<const TensorInfo> in,
                         absl::Span<TensorInfo> out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present())
    return absl::InvalidArgumentError("Gather needs data and indices");
  if (in[1].dtype != DataType::kInt64 && in[1].dtype != DataType::kInt32)
    return absl::InvalidArgumentError("indices must be int64 or int32");
  const Shape& data = in[0].shape;
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, data.size());
  if (!axis.ok()) return axis.status();
  Shape shape(data.begin(), data.begin() + *axis);
  shape.insert(shape.end(), in[1].shape.begin(), in[1].shape.end());
  shape.insert(shape.end(), data.begin() + *axis + 1, data.end());
  out[0].dtype = in[0].dtype;
  out[0].shape = std::move(shape);
  return absl::OkStatus();
}

}  // namespace

std::vector<int64_t> TransposePerm(const TransposeAttrs& attrs, size_t rank) {
  if (!attrs.perm.empty()) return attrs.perm;
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
  return perm;
}

void RegisterTensorSchemas(SchemaRegistry& registry) {
  registry.Register("Transpose",
                    std::make_shared<FunctionSchema<TransposeAttrs>>(
                        &ResolveTranspose, &InferTranspose));
  registry.Register("Concat", std::make_shared<FunctionSchema<ConcatAttrs>>(
                                  &ResolveConcat, &InferConcat));
  registry.Register("Gather", std::make_shared<FunctionSchema<GatherAttrs>>(
                                  &ResolveGather, &InferGather));
}

}  // namespace coalesce
