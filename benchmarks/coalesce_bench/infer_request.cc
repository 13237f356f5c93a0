#include "benchmarks/coalesce_bench/infer_request.h"

namespace coalesce::bench {

absl::StatusOr<inference::ModelInferRequest> BuildInferRequest(
    const RequestContents& contents) {
  inference::ModelInferRequest request;
  request.set_model_name(contents.model);
  request.set_model_version(contents.version);
  uint64_t seed = contents.seed;
  for (const TensorSpec& spec : contents.inputs) {
    const uint64_t input_seed = seed++;
    auto given = contents.given.find(spec.name);
    absl::StatusOr<std::string> data;
    if (given != contents.given.end()) {
      data = given->second;
    } else if (contents.input_data_dir.empty()) {
      data = RandomTensorData(spec, input_seed);
    } else {
      data = ReadTensorFile(contents.input_data_dir, spec);
    }
    if (!data.ok()) return data.status();
    auto* input = request.add_inputs();
    input->set_name(spec.name);
    input->set_datatype(spec.datatype);
    for (int64_t d : spec.shape) input->add_shape(d);
    request.add_raw_input_contents(std::move(*data));
  }
  return request;
}

}  // namespace coalesce::bench
