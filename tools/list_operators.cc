// coalesce-list-operators: prints the ONNX operators the engine registers,
// one Markdown table row each: the operator, whether the CPU executor runs
// it, whether the device registry (GPU instances) lowers it, and what its
// device-neutral schema does (engine/schema/op_schema.h): "attributes,
// inference", "attributes" (inference still in the CPU kernel) or "-".
// scripts/gen-operator-docs writes its output into docs/engine.md, and a
// test checks that the two agree, so the documented list cannot drift.
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "engine/device/device_ops.h"
#include "engine/op_registry.h"
#include "engine/schema/op_schema.h"

int main() {
  const std::vector<std::string> cpu =
      coalesce::OpRegistry::Builtin().OnnxOperators();
  const std::vector<std::string> device = coalesce::DeviceOnnxOperators();
  std::set<std::string> all(cpu.begin(), cpu.end());
  all.insert(device.begin(), device.end());
  const std::set<std::string> on_cpu(cpu.begin(), cpu.end());
  const std::set<std::string> on_device(device.begin(), device.end());
  const coalesce::SchemaRegistry& schemas = coalesce::SchemaRegistry::Builtin();
  std::cout << "| operator | CPU | GPU | schema |\n|---|---|---|---|\n";
  for (const std::string& op : all) {
    const coalesce::OpSchema* schema = schemas.Find("", op);
    const char* schema_column = schema == nullptr  ? "-"
                                : schema->infers() ? "attributes, inference"
                                                   : "attributes";
    std::cout << "| " << op << " | " << (on_cpu.count(op) ? "yes" : "-")
              << " | " << (on_device.count(op) ? "yes" : "-") << " | "
              << schema_column << " |\n";
  }
  return 0;
}
