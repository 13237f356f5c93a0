// KServe v2 REST inference bodies (JSON, with Triton's binary tensor data
// extension) translated to and from the gRPC messages, so that the HTTP
// frontend hands the same ModelInferRequest to the same decoder, validator
// and batcher as the gRPC frontend (issue 29: one path from the wire into
// the batcher, two frontends).
//
// Request body: a JSON object, followed by binary tensor data when the
// Inference-Header-Content-Length header gives the JSON's length.
//   {"id": "...", "parameters": {...},
//    "inputs": [{"name", "shape", "datatype", "parameters"?, "data"?}],
//    "outputs": [{"name", "parameters"?}]}
// An input's "data" is its values in row-major order, flat or nested (any
// nesting, only the count must match the shape): JSON booleans for BOOL,
// integers in range for INT*/UINT*, numbers for FP32/FP64, strings for
// BYTES. FP16 and BF16 cannot be written in JSON (as in Triton): they come
// as binary data. An input with parameter "binary_data_size" takes that
// many bytes of the binary data instead, in input order, and the sizes must
// add up to the binary data exactly. An input whose parameters name a
// "shared_memory_region" has neither. Every input outside shared memory
// becomes one raw_input_contents entry (BYTES serialized as on gRPC), so
// the message is what a gRPC client sending raw contents would send.
// Parameters (request, input, output) carry over as InferParameter (bool,
// int64, uint64 above int64's range, double, string), except the HTTP-only
// "binary_data_size", "binary_data" and "binary_data_output".
//
// Response: outputs as JSON values ("data", flat, as Triton writes them) or,
// when asked ("binary_data": true on the output, or "binary_data_output"
// in the request's parameters) and always for FP16/BF16, as binary data
// after the JSON with parameter "binary_data_size"; outputs written to
// shared memory carry their region parameters and no data.
#ifndef COALESCE_SERVER_REST_INFER_H_
#define COALESCE_SERVER_REST_INFER_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "proto/grpc_service.pb.h"

namespace coalesce {

struct RestInferRequest {
  inference::ModelInferRequest proto;
  // Outputs whose data goes back binary, by name: "binary_data" on the
  // output, else the request's "binary_data_output".
  std::map<std::string, bool> binary_outputs;
  bool binary_by_default = false;
};

// `body`, the request's; `header_length`, its Inference-Header-Content-
// Length when it has one; `model` and `version` from the URL (version may
// be empty). InvalidArgument naming the tensor or field for: malformed
// JSON, a missing or mistyped field, values that do not match the shape or
// the datatype, FP16/BF16 values in JSON, binary sizes that do not add up
// to the binary data, a header length past the body.
absl::StatusOr<RestInferRequest> ParseRestInfer(
    std::string_view body, std::optional<size_t> header_length,
    std::string_view model, std::string_view version);

struct RestInferResponse {
  std::string json;
  std::string binary;  // empty when no output went binary
};

// `response` (as the gRPC path filled it: one raw_output_contents entry per
// output) for the client of `request`. Internal when an output's bytes do
// not fit its datatype and shape.
absl::StatusOr<RestInferResponse> FormatRestInfer(
    const inference::ModelInferResponse& response,
    const RestInferRequest& request);

}  // namespace coalesce

#endif  // COALESCE_SERVER_REST_INFER_H_
