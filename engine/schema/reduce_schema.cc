#include "engine/schema/reduce_schema.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

absl::StatusOr<ReduceAttrs> Resolve(const SchemaNode& node,
                                    int64_t axes_input_opset) {
  ReduceAttrs attrs;
  attrs.axes_from_input = node.opset >= axes_input_opset;
  absl::StatusOr<int64_t> keepdims = node.attributes.GetInt("keepdims", 1);
  if (!keepdims.ok()) return keepdims.status();
  attrs.keepdims = *keepdims != 0;
  if (attrs.axes_from_input) {
    absl::StatusOr<int64_t> noop =
        node.attributes.GetInt("noop_with_empty_axes", 0);
    if (!noop.ok()) return noop.status();
    attrs.noop_with_empty_axes = *noop != 0;
    if (node.attributes.Has("axes")) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'axes' is not allowed at opset ", node.opset,
                       "; axes are input 1"));
    }
  } else {
    absl::StatusOr<std::vector<int64_t>> axes = node.attributes.GetInts("axes");
    if (!axes.ok()) return axes.status();
    attrs.axes = *std::move(axes);
  }
  return attrs;
}

absl::Status Infer(const ReduceAttrs& attrs, absl::Span<const TensorInfo> in,
                   absl::Span<TensorInfo> out) {
  if (absl::Status s = ExpectInputType(in, 0, DataType::kFp32); !s.ok())
    return s;
  absl::StatusOr<std::vector<bool>> reduce =
      ReducedDims(attrs, in[0].shape, in.size() > 1 ? in[1] : TensorInfo{});
  if (!reduce.ok()) return reduce.status();
  out[0].dtype = DataType::kFp32;
  out[0].shape.clear();
  for (size_t d = 0; d < reduce->size(); ++d) {
    if (!(*reduce)[d]) {
      out[0].shape.push_back(in[0].shape[d]);
    } else if (attrs.keepdims) {
      out[0].shape.push_back(1);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<bool>> ReducedDims(const ReduceAttrs& attrs,
                                              const Shape& shape,
                                              const TensorInfo& axes_input,
                                              const char* axes_data) {
  std::vector<int64_t> axes = attrs.axes;
  if (attrs.axes_from_input && axes_input.present()) {
    if (axes_input.dtype != DataType::kInt64 || axes_input.shape.size() != 1 ||
        (axes_data == nullptr && axes_input.constant_data == nullptr)) {
      return absl::InvalidArgumentError(
          "axes (input 1) must be a constant 1-D int64 tensor");
    }
    const auto* data = reinterpret_cast<const int64_t*>(
        axes_data != nullptr ? axes_data : axes_input.constant_data);
    axes.assign(data, data + axes_input.shape[0]);
  }
  const int64_t rank = shape.size();
  if (axes.empty()) {
    return std::vector<bool>(rank, !attrs.noop_with_empty_axes);
  }
  std::vector<bool> reduce(rank, false);
  for (int64_t axis : axes) {
    absl::StatusOr<int64_t> a = NormalizeAxis(axis, rank);
    if (!a.ok()) return a.status();
    if (reduce[*a]) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis ", axis, " is listed twice"));
    }
    reduce[*a] = true;
  }
  return reduce;
}

namespace {

absl::StatusOr<ArgMaxAttrs> ResolveArgMax(const SchemaNode& node) {
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", 0);
  absl::StatusOr<int64_t> keepdims = node.attributes.GetInt("keepdims", 1);
  absl::StatusOr<int64_t> last = node.attributes.GetInt("select_last_index", 0);
  for (const absl::Status& s :
       {axis.status(), keepdims.status(), last.status()})
    if (!s.ok()) return s;
  return ArgMaxAttrs{*axis, *keepdims != 0, *last != 0};
}

absl::Status InferArgMax(const ArgMaxAttrs& attrs,
                         absl::Span<const TensorInfo> in,
                         absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present())
    return absl::InvalidArgumentError("input 0 is required");
  const DataType t = in[0].dtype;
  if (t != DataType::kFp32 && t != DataType::kInt64 && t != DataType::kInt32)
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported type ", std::string(DataTypeName(t))));
  const Shape& s = in[0].shape;
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, s.size());
  if (!axis.ok()) return axis.status();
  if (s[*axis] == 0)
    return absl::InvalidArgumentError("ArgMax over an empty axis");
  Shape shape = s;
  if (attrs.keepdims)
    shape[*axis] = 1;
  else
    shape.erase(shape.begin() + *axis);
  out[0].dtype = DataType::kInt64;
  out[0].shape = std::move(shape);
  return absl::OkStatus();
}

}  // namespace

void RegisterReduceSchemas(SchemaRegistry& registry) {
  registry.Register("ArgMax", std::make_shared<FunctionSchema<ArgMaxAttrs>>(
                                  &ResolveArgMax, &InferArgMax));
  for (const auto& [op, axes_input_opset] :
       {std::pair<const char*, int64_t>{"ReduceSum", 13},
        {"ReduceMean", 18},
        {"ReduceMax", 18},
        {"ReduceMin", 18},
        {"ReduceProd", 18},
        {"ReduceL1", 18},
        {"ReduceL2", 18},
        {"ReduceSumSquare", 18},
        {"ReduceLogSum", 18},
        {"ReduceLogSumExp", 18}}) {
    const int64_t opset = axes_input_opset;
    registry.Register(op, std::make_shared<FunctionSchema<ReduceAttrs>>(
                              [opset](const SchemaNode& node) {
                                return Resolve(node, opset);
                              },
                              &Infer));
  }
}

}  // namespace coalesce
