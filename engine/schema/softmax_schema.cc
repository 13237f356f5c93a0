#include "engine/schema/softmax_schema.h"

#include <memory>

#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

absl::StatusOr<SoftmaxAttrs> Resolve(const SchemaNode& node) {
  const bool legacy = node.opset < 13;
  absl::StatusOr<int64_t> axis =
      node.attributes.GetInt("axis", legacy ? 1 : -1);
  if (!axis.ok()) return axis.status();
  return SoftmaxAttrs{*axis, legacy};
}

absl::Status Infer(const SoftmaxAttrs& attrs, absl::Span<const TensorInfo> in,
                   absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, in[0].shape.size());
  if (!axis.ok()) return axis.status();
  out[0] = {DataType::kFp32, in[0].shape, nullptr};
  return absl::OkStatus();
}

}  // namespace

void RegisterSoftmaxSchemas(SchemaRegistry& registry) {
  auto schema =
      std::make_shared<FunctionSchema<SoftmaxAttrs>>(&Resolve, &Infer);
  registry.Register("Softmax", schema);
  registry.Register("LogSoftmax", schema);
}

}  // namespace coalesce
