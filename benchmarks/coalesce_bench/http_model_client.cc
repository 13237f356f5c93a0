#include "benchmarks/coalesce_bench/http_model_client.h"

#include "absl/strings/str_cat.h"
#include "benchmarks/coalesce_bench/http_get.h"
#include "benchmarks/coalesce_bench/rest_infer_body.h"
#include "google/protobuf/util/json_util.h"

namespace coalesce::bench {

absl::Status HttpModelClient::Get(const std::string& path,
                                  const std::string& what,
                                  google::protobuf::Message* message) const {
  absl::StatusOr<HttpAnswer> answer =
      HttpCall(server_, "GET", path, "", timeout_);
  absl::Status status =
      answer.ok() ? StatusOfHttpAnswer(*answer) : answer.status();
  if (status.ok()) {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    auto parsed = google::protobuf::util::JsonStringToMessage(answer->body,
                                                              message, options);
    if (!parsed.ok()) {
      status = absl::InternalError(
          absl::StrCat("the answer is not a ", message->GetDescriptor()->name(),
                       ": ", std::string(parsed.message())));
    }
  }
  if (status.ok()) return status;
  return absl::Status(
      status.code(), absl::StrCat("GET ", path, " for ", what, " failed: ",
                                  absl::StatusCodeToString(status.code()), ": ",
                                  status.message()));
}

absl::StatusOr<ModelInfo> HttpModelClient::GetModelInfo(
    const std::string& model, const std::string& version) {
  const std::string what = absl::StrCat("model '", model, "'");
  inference::ModelMetadataResponse metadata;
  if (absl::Status s = Get(RestModelPath(model, version), what, &metadata);
      !s.ok()) {
    return s;
  }
  ModelInfo info = ModelInfoFromMetadata(metadata);
  inference::ModelConfig config;
  if (absl::Status s =
          Get(absl::StrCat(RestModelPath(model, version), "/config"), what,
              &config);
      !s.ok()) {
    return s;
  }
  info.max_batch_size = config.max_batch_size();
  return info;
}

absl::StatusOr<ServerStatsSnapshot> HttpModelClient::GetStatistics(
    const std::string& model, const std::string& version) {
  inference::ModelStatisticsResponse stats;
  if (absl::Status s =
          Get(absl::StrCat(RestModelPath(model, version), "/stats"),
              absl::StrCat("model '", model, "'"), &stats);
      !s.ok()) {
    return s;
  }
  return SnapshotFromProto(stats, model, version);
}

}  // namespace coalesce::bench
