// ResponseSinks that write a request's outputs straight into the gRPC
// response message (one raw_output_contents entry per output, so Triton's
// clients find them by position) and complete the RPC.
//
// ProtoResponseSink holds the response being built and any input bytes the
// decoder had to convert; subclasses decide how completion is delivered:
// UnaryResponseSink finishes a unary ModelInfer call, StreamResponseSink hands
// the response to its ModelStreamInfer stream. A sink is used by one thread at
// a time (the batcher's contract), except IsCancelled, which is thread-safe.
#ifndef COALESCE_SERVER_RESPONSE_SINKS_H_
#define COALESCE_SERVER_RESPONSE_SINKS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "batching/inference_request.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.pb.h"
#include "server/classification.h"
#include "server/inflight_budget.h"
#include "server/shared_memory.h"

namespace coalesce {

class StreamInferReactor;

class ProtoResponseSink : public ResponseSink {
 public:
  explicit ProtoResponseSink(inference::ModelInferResponse* response)
      : response_(response) {}

  char* AddOutput(const std::string& name, DataType dtype, const Shape& shape,
                  size_t byte_size) override;
  void AddDeviceOutput(const std::string& name, DataType dtype,
                       const Shape& shape, size_t byte_size) override;

  // Buffers for input bytes converted while decoding; live as long as the sink.
  std::deque<std::string>* converted() { return &converted_; }
  inference::ModelInferResponse* response() { return response_; }

  // Outputs to return as their top classes (classification.h).
  void set_classification(ClassificationRequest c) {
    classification_ = std::move(c);
  }

  // Outputs to write into shared memory instead of the response: their
  // bytes go straight into the span (the response keeps an empty
  // raw_output_contents entry in their place, so positions still match);
  // an output larger than its span fails the request, naming both. A span
  // of a CUDA region that AddOutput (not AddDeviceOutput) filled goes
  // through host memory and is written to the device by Finalize.
  void set_output_regions(std::map<std::string, SharedMemorySpan> regions) {
    output_regions_ = std::move(regions);
  }
  // The request's share of --max-inflight-bytes, returned by Finalize.
  void set_lease(InflightBudget::Lease lease) { lease_ = std::move(lease); }
  // Keeps input spans mapped until the sink is destroyed.
  std::vector<SharedMemorySpan>* input_spans() { return &input_spans_; }

 protected:
  // The status to answer with once the outputs are final: `status`, or the
  // error of turning outputs into classes. Returns the lease.
  absl::Status Finalize(const absl::Status& status);

 private:
  inference::ModelInferResponse* response_;
  std::deque<std::string> converted_;
  ClassificationRequest classification_;
  std::map<std::string, SharedMemorySpan> output_regions_;
  // Host copies of outputs bound for CUDA regions, by name; Finalize
  // writes them to the device.
  std::map<std::string, std::string> written_back_;
  std::vector<SharedMemorySpan> input_spans_;
  std::string scratch_;        // where an output too large for its span goes
  absl::Status output_error_;  // the first such output
  InflightBudget::Lease lease_;
};

// Completes a unary ModelInfer. `context`, `reactor` and `response` belong to
// gRPC and stay valid until Finish.
class UnaryResponseSink : public ProtoResponseSink {
 public:
  UnaryResponseSink(grpc::CallbackServerContext* context,
                    grpc::ServerUnaryReactor* reactor,
                    inference::ModelInferResponse* response)
      : ProtoResponseSink(response), context_(context), reactor_(reactor) {}

  void Finish(const absl::Status& status) override;
  bool IsCancelled() const override { return context_->IsCancelled(); }

 private:
  grpc::CallbackServerContext* context_;
  grpc::ServerUnaryReactor* reactor_;
};

// One request of a ModelStreamInfer stream. Owns the request message (the
// stream reuses its read buffer) and the response it builds.
class StreamResponseSink : public ProtoResponseSink {
 public:
  // `sequence` is the request's position in its stream.
  StreamResponseSink(StreamInferReactor* stream, uint64_t sequence,
                     std::unique_ptr<inference::ModelInferRequest> request);

  const inference::ModelInferRequest& request() const { return *request_; }
  void Finish(const absl::Status& status) override;
  bool IsCancelled() const override;

 private:
  StreamResponseSink(
      StreamInferReactor* stream, uint64_t sequence,
      std::unique_ptr<inference::ModelInferRequest> request,
      std::unique_ptr<inference::ModelStreamInferResponse> message);

  StreamInferReactor* stream_;
  uint64_t sequence_;
  std::unique_ptr<inference::ModelInferRequest> request_;
  std::unique_ptr<inference::ModelStreamInferResponse> message_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_RESPONSE_SINKS_H_
