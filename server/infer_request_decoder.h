// Decoding a ModelInferRequest into an InferenceRequest without copying
// tensor bytes: inputs are views into the request message (raw contents, or
// the typed field when its in-memory layout is the tensor's). Only typed
// contents that must change width (INT8/INT16/UINT8/UINT16 from 32-bit
// fields, BYTES) are converted into `converted`.
#ifndef COALESCE_SERVER_INFER_REQUEST_DECODER_H_
#define COALESCE_SERVER_INFER_REQUEST_DECODER_H_

#include <deque>
#include <string>

#include "absl/status/status.h"
#include "batching/inference_request.h"
#include "proto/grpc_service.pb.h"

namespace coalesce {

// Fills request->id, inputs, requested_outputs, priority and timeout from
// `proto`. InvalidArgument naming the tensor for: an unknown datatype string,
// raw and typed contents in one request, a raw_input_contents count that does
// not match the inputs, typed contents in the wrong field for the datatype,
// negative dims, or a malformed `priority`/`timeout` parameter.
// REQUIRES: `proto` and `*converted` outlive the request's views.
absl::Status DecodeInferRequest(const inference::ModelInferRequest& proto,
                                std::deque<std::string>* converted,
                                InferenceRequest* request);

}  // namespace coalesce

#endif  // COALESCE_SERVER_INFER_REQUEST_DECODER_H_
