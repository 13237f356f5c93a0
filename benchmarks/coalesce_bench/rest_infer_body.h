// RestInferBody: a prepared ModelInferRequest as the body of a KServe v2
// REST infer call with Triton's binary tensor data extension, as
// perf_analyzer sends it over HTTP: a JSON header naming each input with
// its "binary_data_size", followed by the inputs' raw bytes, and every
// output asked for as binary data ("binary_data_output"). Sequence, priority
// and timeout parameters carry over. Built once per pool variant.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_REST_INFER_BODY_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_REST_INFER_BODY_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "proto/grpc_service.pb.h"

namespace coalesce::bench {

struct RestInferBody {
  std::string body;          // JSON header, then the binary data
  size_t header_length = 0;  // Inference-Header-Content-Length
};

// InvalidArgument when an input is not in raw_input_contents (the only form
// BuildInferRequest makes) or a parameter has no JSON form.
absl::StatusOr<RestInferBody> BuildRestInferBody(
    const inference::ModelInferRequest& request);

// The model's REST path, /v2/models/<model>[/versions/<v>], the names
// percent-encoded; its infer call is that + "/infer".
std::string RestModelPath(const std::string& model, const std::string& version);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_REST_INFER_BODY_H_
