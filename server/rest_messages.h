// KServe v2 REST bodies other than inference (rest_infer.h has those): the
// JSON that Triton's HTTP endpoints take and give, to and from the protocol
// messages KServeService works on.
//
// Responses are the messages in protobuf's JSON mapping with the field names
// as written in the .proto (name, max_batch_size, ...), every field printed,
// and 64-bit integers as JSON numbers rather than the mapping's strings, as
// Triton writes them (a shape is [-1, 16], not ["-1", "16"]).
//
// Request bodies may be empty where every field is optional. Each parser
// answers InvalidArgument naming the field for malformed JSON, a missing or
// mistyped field.
#ifndef COALESCE_SERVER_REST_MESSAGES_H_
#define COALESCE_SERVER_REST_MESSAGES_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"
#include "proto/grpc_service.pb.h"

namespace coalesce {

// `message` as Triton's HTTP endpoints write it (above).
nlohmann::json ProtoJson(const google::protobuf::Message& message);

// A JSON parameter value (bool, integer, number or string) as an
// InferParameter: integers above int64's range become uint64_param.
absl::StatusOr<inference::InferParameter> InferParameterFromJson(
    std::string_view key, const nlohmann::json& value);

// POST /v2/repository/index: {"ready": bool}.
absl::StatusOr<inference::RepositoryIndexRequest> ParseIndexBody(
    std::string_view body);

// POST /v2/repository/models/{model}/load: {"parameters": {"config":
// "<ModelConfig as JSON>", "file:<path>": "<contents in base64>", ...}}.
absl::StatusOr<inference::RepositoryModelLoadRequest> ParseLoadBody(
    std::string_view model, std::string_view body);

// POST /v2/repository/models/{model}/unload: {"parameters": {...}}.
absl::StatusOr<inference::RepositoryModelUnloadRequest> ParseUnloadBody(
    std::string_view model, std::string_view body);

// POST /v2/systemsharedmemory/region/{name}/register:
// {"key": str, "offset": uint, "byte_size": uint}.
absl::StatusOr<inference::SystemSharedMemoryRegisterRequest>
ParseSystemRegisterBody(std::string_view name, std::string_view body);

// POST /v2/cudasharedmemory/region/{name}/register:
// {"raw_handle": {"b64": str}, "device_id": int, "byte_size": uint}.
absl::StatusOr<inference::CudaSharedMemoryRegisterRequest>
ParseCudaRegisterBody(std::string_view name, std::string_view body);

}  // namespace coalesce

#endif  // COALESCE_SERVER_REST_MESSAGES_H_
