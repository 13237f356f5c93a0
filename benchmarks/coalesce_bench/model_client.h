// ModelControl: the benchmark's control calls to the server (blocking):
// model metadata + config before a run, statistics around windows.
// ModelClient makes them as gRPC RPCs; HttpModelClient
// (http_model_client.h) as KServe v2 REST calls.
//
// Thread-safe; every call has the client's deadline.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_MODEL_CLIENT_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_MODEL_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/coalesce_bench/input_data.h"
#include "benchmarks/coalesce_bench/server_stats.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.grpc.pb.h"

namespace coalesce::bench {

struct ModelInfo {
  std::string platform;
  std::vector<TensorSpec> inputs;  // as in the metadata (-1 = variable)
  std::vector<std::string> outputs;
  int64_t max_batch_size = 0;  // from ModelConfig; 0 when not batching
  std::string config_note;     // why max_batch_size is a guess, if it is
};

class ModelControl {
 public:
  virtual ~ModelControl() = default;

  // Metadata and config of the model. NotFound for an unknown model or
  // version, Unavailable when the server cannot be reached; the message
  // says which, with the server's own message. A server without the
  // ModelConfig call gives max_batch_size 0 and a config_note.
  virtual absl::StatusOr<ModelInfo> GetModelInfo(
      const std::string& model, const std::string& version) = 0;

  // Cumulative statistics of the model (all versions when version is empty).
  virtual absl::StatusOr<ServerStatsSnapshot> GetStatistics(
      const std::string& model, const std::string& version) = 0;
};

// The metadata as a ModelInfo (max_batch_size left to the config).
ModelInfo ModelInfoFromMetadata(
    const inference::ModelMetadataResponse& metadata);

class ModelClient : public ModelControl {
 public:
  ModelClient(std::shared_ptr<grpc::Channel> channel,
              std::chrono::milliseconds timeout);

  absl::StatusOr<ModelInfo> GetModelInfo(const std::string& model,
                                         const std::string& version) override;
  absl::StatusOr<ServerStatsSnapshot> GetStatistics(
      const std::string& model, const std::string& version) override;

 private:
  void SetDeadline(grpc::ClientContext* context) const;
  absl::Status FillConfig(const std::string& model, const std::string& version,
                          ModelInfo* info);

  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_MODEL_CLIENT_H_
