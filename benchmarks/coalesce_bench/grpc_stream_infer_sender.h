// GrpcStreamInferSender: InferSender over ModelStreamInfer, the KServe v2
// bidirectional stream (what perf_analyzer's --streaming measures).
//
// Lane i has its own stream, opened on channel i % channels by the lane's
// first request and kept open for the next ones. A stream carries any number
// of requests in flight (open loop sends several per lane). Each Send takes
// the pool's next request (request_pool.h), round-robin; each request gets
// a fresh id and its response is matched by the id the server echoes in
// infer_response.id, so responses may arrive in any order; a response without
// a known id answers the lane's oldest request.
//
// Errors: a response with error_message fails its request with UNKNOWN (the
// stream protocol carries no code). A request older than the timeout cancels
// its stream: every request on it fails with DEADLINE_EXCEEDED, and the lane's
// next request opens a new stream. A stream the server ends fails its
// requests with the stream's status (UNAVAILABLE if it ended OK).
//
// A stream writes one request at a time from its own copy, whose id it sets
// before each write; with more than one variant in the pool, the request's
// variant is copied in first (a pool of one is never copied again).
//
// Completions run on gRPC's callback threads. Thread-safe. Destroy it only
// after every started request has completed; the destructor closes the
// streams, gives the server 10 s in all to end them, then cancels the rest.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_GRPC_STREAM_INFER_SENDER_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_GRPC_STREAM_INFER_SENDER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "benchmarks/coalesce_bench/grpc_infer_sender.h"
#include "benchmarks/coalesce_bench/infer_sender.h"
#include "benchmarks/coalesce_bench/request_pool.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.grpc.pb.h"

namespace coalesce::bench {

class GrpcStreamInferSender : public InferSender {
 public:
  using Options = GrpcSenderOptions;

  // REQUIRES: pool != nullptr.
  GrpcStreamInferSender(const Options& options,
                        std::shared_ptr<const RequestPool> pool);
  // A pool of one request.
  GrpcStreamInferSender(const Options& options,
                        inference::ModelInferRequest request);
  ~GrpcStreamInferSender() override;

  void Send(int lane, Done done) override;

 private:
  class Stream;

  // The lane's stream, opened if it has none or its stream has ended.
  std::shared_ptr<Stream> StreamFor(int lane) ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels streams whose oldest request is past the timeout, until stopped.
  void WatchDeadlines();

  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<const RequestPool> pool_;  // outlives the streams
  std::vector<std::unique_ptr<inference::GRPCInferenceService::Stub>> stubs_;
  std::atomic<uint64_t> next_id_{1};

  absl::Mutex mu_;
  std::map<int, std::shared_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  // Replaced streams whose OnDone may not be over yet.
  std::vector<std::shared_ptr<Stream>> retired_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_GRPC_STREAM_INFER_SENDER_H_
