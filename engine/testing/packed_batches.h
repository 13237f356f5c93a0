// What the token-packing tests share (engine/token_packing_test.cc, on the
// CPU; engine/device/token_packing_device_test.cc, on the simulated
// device): mixed-length batches of a corpus export's inputs, one batch run
// through any executor instance, and the comparison of packed outputs with
// padded ones.
#ifndef COALESCE_ENGINE_TESTING_PACKED_BATCHES_H_
#define COALESCE_ENGINE_TESTING_PACKED_BATCHES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/cpu_executor.h"
#include "engine/executor.h"
#include "engine/model.h"
#include "engine/shape.h"
#include "engine/tensor_file.h"

namespace coalesce::testing {

struct FloatOutput {
  Shape shape;
  std::vector<float> values;
};

// Runs one batch of `inputs` on slot `slot_index` of `exec`; every output
// FLOAT.
absl::StatusOr<std::vector<FloatOutput>> RunBatch(
    ExecutorInstance& exec, const std::vector<::coalesce::HostTensor>& inputs,
    size_t num_outputs, int slot_index = 0);

// One batch of `inputs` through a new CPU executor instance of `model`.
absl::StatusOr<std::vector<FloatOutput>> RunOnCpu(
    std::shared_ptr<const ::coalesce::Model> model,
    const std::vector<::coalesce::HostTensor>& inputs,
    const ::coalesce::CpuExecutorOptions& options = {});

// The inputs of corpus export `dir` (its test_data_set_0, int64 [1, S])
// widened to a batch of `lengths`: each row the first row's tokens, the
// attention_mask 1 for the row's length, ids past it 0 and the row's
// largest id at its last real position (where CLIP's text model pools, at
// the first largest id). Sets *seq to S.
absl::StatusOr<std::vector<::coalesce::HostTensor>> MixedLengthInputs(
    const std::string& dir, const std::vector<int64_t>& lengths, int64_t* seq);

// The same for any padding: `real` [batch * S], nonzero at real positions
// (a left-padded row, a hole), the row's largest id at its last real one.
absl::StatusOr<std::vector<::coalesce::HostTensor>> MaskedInputs(
    const std::string& dir, const std::vector<uint8_t>& real, int64_t batch,
    int64_t* seq);

// "" when `packed` equals `padded` (within `tolerance` times the largest
// magnitude, at least 1) at every real position of a [batch, seq] batch of
// `lengths`, and everywhere in outputs that are not per position; the
// packed outputs' padded positions are zero; and some padded position of
// the padded run is not (so that a run that did not pack fails). Else what
// differs.
std::string CompareAtRealPositions(const std::vector<FloatOutput>& padded,
                                   const std::vector<FloatOutput>& packed,
                                   const std::vector<int64_t>& lengths,
                                   int64_t seq, float tolerance);

// The same for any padding: `real` [batch * seq], nonzero at real
// positions (a left-padded row, a hole).
std::string CompareAtRealPositions(const std::vector<FloatOutput>& padded,
                                   const std::vector<FloatOutput>& packed,
                                   const std::vector<uint8_t>& real,
                                   int64_t batch, int64_t seq, float tolerance);

}  // namespace coalesce::testing

#endif  // COALESCE_ENGINE_TESTING_PACKED_BATCHES_H_
