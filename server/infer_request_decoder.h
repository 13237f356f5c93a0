// Decoding a ModelInferRequest into an InferenceRequest without copying
// tensor bytes: inputs are views into the request message (raw contents, or
// the typed field when its in-memory layout is the tensor's). Only typed
// contents that must change width (INT8/INT16/UINT8/UINT16 from 32-bit
// fields, BYTES) are converted into `converted`.
#ifndef COALESCE_SERVER_INFER_REQUEST_DECODER_H_
#define COALESCE_SERVER_INFER_REQUEST_DECODER_H_

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "batching/inference_request.h"
#include "proto/grpc_service.pb.h"
#include "server/shared_memory.h"

namespace coalesce {

// Fills request->id, inputs, requested_outputs, priority and timeout from
// `proto`. An input whose parameters name a `shared_memory_region` (with
// `shared_memory_byte_size`, optionally `shared_memory_offset`) is a view of
// that region of `shared_memory`, whose span is appended to `*spans` (keep
// them as long as the request); the other inputs take the raw_input_contents
// in order. InvalidArgument naming the tensor for: an unknown datatype
// string, raw and typed contents in one request, a raw_input_contents count
// that does not match the inputs outside shared memory, typed contents in the
// wrong field for the datatype, negative dims, a malformed `priority`/
// `timeout` or shared memory parameter, an unknown region or a span
// outside its region.
// REQUIRES: `proto` and `*converted` outlive the request's views.
absl::Status DecodeInferRequest(
    const inference::ModelInferRequest& proto,
    std::deque<std::string>* converted, InferenceRequest* request,
    const SharedMemoryManager* shared_memory = nullptr,
    std::vector<SharedMemorySpan>* spans = nullptr);

// Where a tensor lives in shared memory, from its parameters.
struct SharedMemoryRef {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// nullopt when `params` name no region; InvalidArgument naming `kind`
// ("input"/"output") and `name` when the parameters are malformed.
absl::StatusOr<std::optional<SharedMemoryRef>> SharedMemoryRefOf(
    const google::protobuf::Map<std::string, inference::InferParameter>& params,
    const std::string& kind, const std::string& name);

}  // namespace coalesce

#endif  // COALESCE_SERVER_INFER_REQUEST_DECODER_H_
