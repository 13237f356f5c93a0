#include "engine/device/device_storage.h"

#include <numeric>

#include "engine/device/device_ops.h"

namespace coalesce {
namespace {

// Union-find over value ids: the values a moving node ties together.
class Groups {
 public:
  explicit Groups(size_t n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int Find(int id) {
    while (parent_[id] != id) id = parent_[id] = parent_[parent_[id]];
    return id;
  }
  void Join(int a, int b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<int> parent_;
};

bool IsFloat(const NeutralPlan& plan, int id) {
  return id >= 0 && plan.values[id].info.dtype == DataType::kFp32;
}

// Whether `use` lets input `index` (true) or an output (false) be float16.
bool AllowsHalf(DeviceHalfUse use, bool input, size_t index) {
  switch (use) {
    case DeviceHalfUse::kCompute:
    case DeviceHalfUse::kMove:
      return true;
    case DeviceHalfUse::kResult:
      return !input;
    case DeviceHalfUse::kProducts:
      // Operands A and B, a MatMul's residual z (input 3, read as stored),
      // and the result; a bias or C (input 2) is read as float32 (converted
      // for a float16 result).
      return !input || index != 2;
    case DeviceHalfUse::kNone:
      return false;
  }
  return false;
}

}  // namespace

std::vector<DeviceFloat> PlanDeviceStorage(
    const NeutralPlan& plan, DeviceFloat activations,
    const std::vector<AttentionSite>& attention) {
  std::vector<DeviceFloat> storage(plan.values.size(), DeviceFloat::kFloat);
  if (activations == DeviceFloat::kFloat) return storage;
  std::vector<bool> fused(plan.nodes.size(), false);
  for (const AttentionSite& site : attention)
    for (int n : site.nodes) fused[n] = true;
  Groups groups(plan.values.size());
  for (const AttentionSite& site : attention) {
    groups.Join(site.k.value, site.q.value);
    groups.Join(site.v.value, site.q.value);
  }
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const PlanNode& node = plan.nodes[n];
    if (fused[n] || node.folded || HalfUseOf(node) != DeviceHalfUse::kMove)
      continue;
    int first = -1;
    for (const std::vector<int>* ids : {&node.inputs, &node.outputs}) {
      for (int id : *ids) {
        if (!IsFloat(plan, id)) continue;
        if (first < 0) first = id;
        groups.Join(id, first);
      }
    }
  }
  std::vector<bool> may_be_half(plan.values.size(), true);
  for (size_t id = 0; id < plan.values.size(); ++id) {
    if (!IsFloat(plan, static_cast<int>(id)) ||
        plan.values[id].storage != ValueStorage::kIntermediate)
      may_be_half[groups.Find(static_cast<int>(id))] = false;
  }
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const PlanNode& node = plan.nodes[n];
    if (fused[n] || node.folded) continue;
    const DeviceHalfUse use = HalfUseOf(node);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int id = node.inputs[i];
      if (IsFloat(plan, id) && !AllowsHalf(use, true, i))
        may_be_half[groups.Find(id)] = false;
    }
    for (int id : node.outputs) {
      if (IsFloat(plan, id) && !AllowsHalf(use, false, 0))
        may_be_half[groups.Find(id)] = false;
    }
  }
  for (size_t id = 0; id < plan.values.size(); ++id) {
    if (IsFloat(plan, static_cast<int>(id)) &&
        may_be_half[groups.Find(static_cast<int>(id))])
      storage[id] = activations;
  }
  return storage;
}

size_t StoredBytes(const NeutralPlan& plan,
                   const std::vector<DeviceFloat>& storage, int id) {
  const size_t bytes = plan.values[id].byte_size;
  return storage[id] != DeviceFloat::kFloat ? bytes / 2 : bytes;
}

}  // namespace coalesce
