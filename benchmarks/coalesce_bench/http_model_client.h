// HttpModelClient: ModelControl over the KServe v2 REST protocol (-i http):
// GET /v2/models/<m>[/versions/<v>] and .../config before a run, .../stats
// around windows. The JSON answers are read into the protocol's messages
// (protobuf's JSON mapping, which takes the .proto field names and 64-bit
// integers as numbers), so both protocols fill the same structures.
// Thread-safe (a curl handle per call).
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_MODEL_CLIENT_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_MODEL_CLIENT_H_

#include <chrono>
#include <string>

#include "benchmarks/coalesce_bench/model_client.h"

namespace coalesce::bench {

class HttpModelClient : public ModelControl {
 public:
  // `server`: host:port of the HTTP endpoint.
  HttpModelClient(std::string server, std::chrono::milliseconds timeout)
      : server_(std::move(server)), timeout_(timeout) {}

  absl::StatusOr<ModelInfo> GetModelInfo(const std::string& model,
                                         const std::string& version) override;
  absl::StatusOr<ServerStatsSnapshot> GetStatistics(
      const std::string& model, const std::string& version) override;

 private:
  // GET `path` read into `message`; the error names `what`.
  absl::Status Get(const std::string& path, const std::string& what,
                   google::protobuf::Message* message) const;

  const std::string server_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_HTTP_MODEL_CLIENT_H_
