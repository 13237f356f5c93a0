// GrpcInferSender: InferSender over asynchronous gRPC (the callback API),
// spread over several channels.
//
// Each channel is created with a distinct channel argument and a local
// subchannel pool, so gRPC opens one TCP connection per channel instead of
// sharing one subchannel among them. Lane i uses channel i % channels. Each
// Send takes the pool's next request (request_pool.h) and passes it to gRPC
// without a copy: the sender holds the pool, which never changes, so the
// request outlives the call. Completions run on gRPC's callback threads.
// Thread-safe. Destroy it only after every started request has completed (the
// load generators wait for that).
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_GRPC_INFER_SENDER_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_GRPC_INFER_SENDER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/coalesce_bench/infer_sender.h"
#include "benchmarks/coalesce_bench/request_pool.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.grpc.pb.h"

namespace coalesce::bench {

// A channel to `url` that shares no subchannel with any other index. Message
// size limits are raised to INT32_MAX, as Triton's clients do.
std::shared_ptr<grpc::Channel> CreateBenchChannel(const std::string& url,
                                                  int index);

// grpc::Status -> absl::Status (the codes are the same numbers).
absl::Status ToAbslStatus(const grpc::Status& status);

// Where and how the gRPC senders (unary and streaming) send.
struct GrpcSenderOptions {
  std::string url;
  int channels = 1;                          // >= 1
  std::chrono::milliseconds timeout{30000};  // per-request deadline
};

class GrpcInferSender : public InferSender {
 public:
  using Options = GrpcSenderOptions;

  // REQUIRES: pool != nullptr.
  GrpcInferSender(const Options& options,
                  std::shared_ptr<const RequestPool> pool);
  // A pool of one request.
  GrpcInferSender(const Options& options, inference::ModelInferRequest request);

  void Send(int lane, Done done) override;

 private:
  struct Call;

  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<const RequestPool> pool_;
  std::vector<std::unique_ptr<inference::GRPCInferenceService::Stub>> stubs_;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_GRPC_INFER_SENDER_H_
