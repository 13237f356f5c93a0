// InferSender: the seam between the load generators and the transport.
//
// A sender starts one inference request (the next of its prepared requests,
// round-robin: request_pool.h) and reports its completion through a
// callback. The gRPC implementation is
// GrpcInferSender (grpc_infer_sender.h); tests use a hand-stepped fake.
// Implementations are thread-safe: Send may be called from any thread,
// including from inside a completion callback.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_INFER_SENDER_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_INFER_SENDER_H_

#include <functional>

#include "absl/status/status.h"

namespace coalesce::bench {

class InferSender {
 public:
  // Receives the request's status; the code numbers are gRPC's.
  using Done = std::function<void(const absl::Status&)>;

  virtual ~InferSender() = default;

  // Starts one request on `lane` (>= 0; lanes are spread over the
  // connections). `done` runs exactly once, on any thread, possibly before
  // Send returns. Every request is bounded by the sender's deadline.
  virtual void Send(int lane, Done done) = 0;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_INFER_SENDER_H_
