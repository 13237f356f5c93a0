// coalesce-list-operators: prints the ONNX operators the engine registers,
// one Markdown table row each: the operator, whether the CPU executor runs
// it, and whether the device registry (GPU instances) lowers it.
// scripts/gen-operator-docs writes its output into docs/engine.md, and a
// test checks that the two agree, so the documented list cannot drift.
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "engine/device/device_ops.h"
#include "engine/op_registry.h"

int main() {
  const std::vector<std::string> cpu =
      coalesce::OpRegistry::Builtin().OnnxOperators();
  const std::vector<std::string> device = coalesce::DeviceOnnxOperators();
  std::set<std::string> all(cpu.begin(), cpu.end());
  all.insert(device.begin(), device.end());
  const std::set<std::string> on_cpu(cpu.begin(), cpu.end());
  const std::set<std::string> on_device(device.begin(), device.end());
  std::cout << "| operator | CPU | GPU |\n|---|---|---|\n";
  for (const std::string& op : all) {
    std::cout << "| " << op << " | " << (on_cpu.count(op) ? "yes" : "-")
              << " | " << (on_device.count(op) ? "yes" : "-") << " |\n";
  }
  return 0;
}
