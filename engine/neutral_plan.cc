#include "engine/neutral_plan.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {

void NodeAttributes::Set(const std::string& name, NodeAttribute value) {
  values_[name] = std::move(value);
}

bool NodeAttributes::Has(const std::string& name) const {
  return values_.count(name) > 0;
}

absl::StatusOr<const NodeAttribute*> NodeAttributes::Find(
    const std::string& name, NodeAttribute::Kind kind) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  if (it->second.kind != kind) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' has the wrong type"));
  }
  return &it->second;
}

absl::StatusOr<int64_t> NodeAttributes::GetInt(const std::string& name,
                                               int64_t default_value) const {
  auto a = Find(name, NodeAttribute::Kind::kInt);
  if (!a.ok()) return a.status();
  return *a == nullptr ? default_value : (*a)->i;
}

absl::StatusOr<float> NodeAttributes::GetFloat(const std::string& name,
                                               float default_value) const {
  auto a = Find(name, NodeAttribute::Kind::kFloat);
  if (!a.ok()) return a.status();
  return *a == nullptr ? default_value : (*a)->f;
}

absl::StatusOr<std::string> NodeAttributes::GetString(
    const std::string& name, const std::string& default_value) const {
  auto a = Find(name, NodeAttribute::Kind::kString);
  if (!a.ok()) return a.status();
  return *a == nullptr ? default_value : (*a)->s;
}

absl::StatusOr<std::vector<int64_t>> NodeAttributes::GetInts(
    const std::string& name) const {
  auto a = Find(name, NodeAttribute::Kind::kInts);
  if (!a.ok()) return a.status();
  return *a == nullptr ? std::vector<int64_t>{} : (*a)->ints;
}

absl::StatusOr<std::vector<float>> NodeAttributes::GetFloats(
    const std::string& name) const {
  auto a = Find(name, NodeAttribute::Kind::kFloats);
  if (!a.ok()) return a.status();
  return *a == nullptr ? std::vector<float>{} : (*a)->floats;
}

std::string NodeLabel(const PlanNode& node) {
  return absl::StrCat("node '", *node.name, "' (op '", *node.op_type, "')");
}

}  // namespace coalesce
