#include "engine/op_kernel.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/prepared_kernel.h"
#include "onnx/onnx_pb.h"

namespace coalesce {
namespace {

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node,
                                          const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

absl::Status WrongType(const std::string& name, const char* want) {
  return absl::InvalidArgumentError(
      absl::StrCat("attribute '", name, "' must be of type ", want));
}

// The attributes a plan carries (tensors and graphs are skipped: no
// operator that reaches a plan reads them).
NodeAttributes ReadNodeAttributes(const onnx::NodeProto& proto) {
  NodeAttributes attributes;
  for (const onnx::AttributeProto& a : proto.attribute()) {
    NodeAttribute v;
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        v.kind = NodeAttribute::Kind::kInt;
        v.i = a.i();
        break;
      case onnx::AttributeProto::FLOAT:
        v.kind = NodeAttribute::Kind::kFloat;
        v.f = a.f();
        break;
      case onnx::AttributeProto::STRING:
        v.kind = NodeAttribute::Kind::kString;
        v.s = a.s();
        break;
      case onnx::AttributeProto::INTS:
        v.kind = NodeAttribute::Kind::kInts;
        v.ints.assign(a.ints().begin(), a.ints().end());
        break;
      case onnx::AttributeProto::FLOATS:
        v.kind = NodeAttribute::Kind::kFloats;
        v.floats.assign(a.floats().begin(), a.floats().end());
        break;
      default:
        continue;
    }
    attributes.Set(a.name(), std::move(v));
  }
  return attributes;
}

}  // namespace

absl::StatusOr<OpNode> OpNode::Resolve(const onnx::NodeProto& proto,
                                       int64_t opset) {
  OpNode node(proto, opset);
  node.attributes_ = ReadNodeAttributes(proto);
  node.schema_ =
      SchemaRegistry::Builtin().Find(proto.domain(), proto.op_type());
  if (node.schema_ == nullptr) return node;
  std::vector<bool> outputs_used;
  for (const std::string& out : proto.output())
    outputs_used.push_back(!out.empty());
  const SchemaNode schema_node{node.attributes_, opset, proto.input_size(),
                               std::move(outputs_used)};
  absl::StatusOr<std::shared_ptr<const OpAttributes>> resolved =
      node.schema_->Resolve(schema_node);
  if (!resolved.ok()) return resolved.status();
  node.resolved_ = *std::move(resolved);
  return node;
}

int OpNode::num_inputs() const { return proto_.input_size(); }
int OpNode::num_outputs() const { return proto_.output_size(); }

bool OpNode::HasAttribute(const std::string& name) const {
  return FindAttribute(proto_, name) != nullptr;
}

absl::StatusOr<int64_t> OpNode::GetInt(const std::string& name,
                                       int64_t default_value) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return default_value;
  if (attr->type() != onnx::AttributeProto::INT) return WrongType(name, "INT");
  return attr->i();
}

absl::StatusOr<float> OpNode::GetFloat(const std::string& name,
                                       float default_value) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return default_value;
  if (attr->type() != onnx::AttributeProto::FLOAT)
    return WrongType(name, "FLOAT");
  return attr->f();
}

absl::StatusOr<std::vector<int64_t>> OpNode::GetInts(
    const std::string& name) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return std::vector<int64_t>{};
  if (attr->type() != onnx::AttributeProto::INTS)
    return WrongType(name, "INTS");
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

absl::StatusOr<std::string> OpNode::GetString(
    const std::string& name, const std::string& default_value) const {
  const onnx::AttributeProto* attr = FindAttribute(proto_, name);
  if (attr == nullptr) return default_value;
  if (attr->type() != onnx::AttributeProto::STRING)
    return WrongType(name, "STRING");
  return attr->s();
}

absl::StatusOr<std::unique_ptr<PreparedKernel>> OpKernel::Prepare(
    absl::Span<const TensorInfo> inputs,
    absl::Span<const TensorInfo> outputs) const {
  return nullptr;
}

void SplitViews(absl::Span<const ConstTensorView> in,
                std::vector<TensorInfo>* infos,
                std::vector<const char*>* data) {
  for (const ConstTensorView& t : in) {
    infos->push_back({t.dtype, t.present() ? *t.shape : Shape{}, nullptr});
    data->push_back(t.data);
  }
}

}  // namespace coalesce
