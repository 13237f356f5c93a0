#include "benchmarks/coalesce_bench/model_client.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/coalesce_bench/grpc_infer_sender.h"

namespace coalesce::bench {
namespace {

std::string ModelLabel(const std::string& model, const std::string& version) {
  return version.empty()
             ? absl::StrCat("model '", model, "'")
             : absl::StrCat("model '", model, "' version ", version);
}

// The status of a failed control RPC, with what was asked in the message.
absl::Status RpcError(absl::string_view rpc, const std::string& what,
                      const grpc::Status& status) {
  const absl::Status s = ToAbslStatus(status);
  return absl::Status(s.code(), absl::StrCat(rpc, " for ", what, " failed: ",
                                             absl::StatusCodeToString(s.code()),
                                             ": ", s.message()));
}

}  // namespace

ModelInfo ModelInfoFromMetadata(
    const inference::ModelMetadataResponse& metadata) {
  ModelInfo info;
  info.platform = metadata.platform();
  for (const auto& input : metadata.inputs()) {
    info.inputs.push_back({input.name(),
                           input.datatype(),
                           {input.shape().begin(), input.shape().end()}});
  }
  for (const auto& output : metadata.outputs()) {
    info.outputs.push_back(output.name());
  }
  return info;
}

ModelClient::ModelClient(std::shared_ptr<grpc::Channel> channel,
                         std::chrono::milliseconds timeout)
    : stub_(inference::GRPCInferenceService::NewStub(std::move(channel))),
      timeout_(timeout) {}

void ModelClient::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() + timeout_);
}

absl::StatusOr<ModelInfo> ModelClient::GetModelInfo(
    const std::string& model, const std::string& version) {
  grpc::ClientContext context;
  SetDeadline(&context);
  inference::ModelMetadataRequest request;
  request.set_name(model);
  request.set_version(version);
  inference::ModelMetadataResponse response;
  grpc::Status status = stub_->ModelMetadata(&context, request, &response);
  if (!status.ok()) {
    return RpcError("ModelMetadata", ModelLabel(model, version), status);
  }
  ModelInfo info = ModelInfoFromMetadata(response);
  if (absl::Status s = FillConfig(model, version, &info); !s.ok()) return s;
  return info;
}

absl::Status ModelClient::FillConfig(const std::string& model,
                                     const std::string& version,
                                     ModelInfo* info) {
  grpc::ClientContext context;
  SetDeadline(&context);
  inference::ModelConfigRequest request;
  request.set_name(model);
  request.set_version(version);
  inference::ModelConfigResponse response;
  grpc::Status status = stub_->ModelConfig(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    info->max_batch_size = 0;
    info->config_note =
        "the server has no ModelConfig RPC: shapes are taken as full shapes "
        "(max_batch_size 0)";
    return absl::OkStatus();
  }
  if (!status.ok()) {
    return RpcError("ModelConfig", ModelLabel(model, version), status);
  }
  info->max_batch_size = response.config().max_batch_size();
  return absl::OkStatus();
}

absl::StatusOr<ServerStatsSnapshot> ModelClient::GetStatistics(
    const std::string& model, const std::string& version) {
  grpc::ClientContext context;
  SetDeadline(&context);
  inference::ModelStatisticsRequest request;
  request.set_name(model);
  request.set_version(version);
  inference::ModelStatisticsResponse response;
  grpc::Status status = stub_->ModelStatistics(&context, request, &response);
  if (!status.ok()) {
    return RpcError("ModelStatistics", ModelLabel(model, version), status);
  }
  return SnapshotFromProto(response, model, version);
}

}  // namespace coalesce::bench
