// The models every device executor is checked with, against the CPU engine:
// one or a few nodes per operator and attribute variant a device lowers
// (device_ops.h), the MLP example, and a model chaining them all, each with
// the input shapes to run and the tolerance the device must meet. The
// simulated device's tests (graph_program_test) and the GPU tests
// (coalesce_gpu_test) run the same list, so a case the simulated device
// passes in CI is the case the GPU must pass.
#ifndef COALESCE_ENGINE_DEVICE_TESTING_DEVICE_TEST_CASES_H_
#define COALESCE_ENGINE_DEVICE_TESTING_DEVICE_TEST_CASES_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/executor.h"
#include "engine/model.h"
#include "engine/shape.h"
#include "engine/testing/onnx_model_builder.h"

namespace coalesce::testing {

struct DeviceTestCase {
  std::string name;
  OnnxModelBuilder model;
  bool optimize = true;  // the graph optimizer on, as in the server
  // Input shapes of each run, in order (plans are built per shape set and
  // reused, so a repeated set checks reuse).
  std::vector<std::vector<Shape>> runs;
  // |device - cpu| <= tolerance * max(1, |cpu|) for every float output
  // element; other outputs must be equal.
  float tolerance = 1e-5f;
  // Integer inputs (indices, token ids) take values in [0, index_bound).
  int64_t index_bound = 10;
};

std::vector<DeviceTestCase> DeviceTestCases();

// gtest prints a case by its name.
inline void PrintTo(const DeviceTestCase& c, std::ostream* os) {
  *os << c.name;
}

// Fresh random inputs of `signature`'s types and `shapes` on every call:
// floats in [-2, 2) (never zero), integers in [0, index_bound), booleans.
std::vector<TypedTensor> RandomInputs(const ModelSignature& signature,
                                      const std::vector<Shape>& shapes,
                                      int64_t index_bound = 10);

// One batch through `executor`'s slot `slot`: inputs in, outputs back.
absl::StatusOr<std::vector<TypedTensor>> RunBatch(
    ExecutorInstance& executor, const ModelSignature& signature, int slot,
    const std::vector<TypedTensor>& inputs);

// "" when every output matches (floats within `tolerance`), else what
// differs first.
std::string CompareOutputs(const std::vector<TypedTensor>& got,
                           const std::vector<TypedTensor>& want,
                           float tolerance);

// Runs every run of `c` through `executor` (alternating its slots) and the
// CPU engine; "" when all match, else the first difference or error.
std::string CheckAgainstCpu(const DeviceTestCase& c,
                            const std::shared_ptr<const Model>& model,
                            ExecutorInstance& executor);

// The case's model as a device program loads it: NCHW, or with the
// channels-last layout pass (the server's layout with FP16).
absl::StatusOr<std::shared_ptr<const Model>> LoadCase(
    const DeviceTestCase& c, bool channels_last = false);

}  // namespace coalesce::testing

#endif  // COALESCE_ENGINE_DEVICE_TESTING_DEVICE_TEST_CASES_H_
