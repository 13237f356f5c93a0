// RequestValidator: checks an InferenceRequest against the model's inputs and
// outputs and computes its RequestLayout. Immutable after construction;
// thread-safe.
#ifndef COALESCE_BATCHING_REQUEST_VALIDATOR_H_
#define COALESCE_BATCHING_REQUEST_VALIDATOR_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "batching/inference_request.h"
#include "batching/queued_request.h"
#include "engine/tensor_spec.h"

namespace coalesce {

class RequestValidator {
 public:
  // `inputs`/`outputs` as in SchedulerOptions (config dims; batch dim
  // excluded when max_batch_size > 0).
  RequestValidator(int max_batch_size, std::vector<TensorSpec> inputs,
                   std::vector<TensorSpec> outputs);

  // The request's layout, or InvalidArgument whose message names the tensor:
  // missing / unexpected / duplicate input, datatype mismatch, shape not
  // matching the config dims, batch dims disagreeing across inputs, batch
  // size outside [1, max_batch_size], data byte size != element count *
  // element size, unknown or duplicate requested output.
  absl::StatusOr<RequestLayout> Validate(const InferenceRequest& request) const;

 private:
  absl::Status MapInputs(const InferenceRequest& request,
                         RequestLayout* layout) const;
  absl::Status CheckInput(const TensorSpec& spec, const RequestInput& input,
                          RequestLayout* layout) const;
  absl::Status CheckBatchSize(const TensorSpec& spec, int64_t batch_size,
                              RequestLayout* layout) const;
  absl::Status MapOutputs(const InferenceRequest& request,
                          RequestLayout* layout) const;

  const int max_batch_size_;
  const std::vector<TensorSpec> inputs_;
  const std::vector<TensorSpec> outputs_;
  absl::flat_hash_map<std::string, int> input_index_;
  absl::flat_hash_map<std::string, int> output_index_;
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_REQUEST_VALIDATOR_H_
