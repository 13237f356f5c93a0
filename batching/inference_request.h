// InferenceRequest: one inference as the batcher sees it, and ResponseSink, the
// frontend's half of answering it.
//
// Ownership: the frontend builds an InferenceRequest (owning its sink) and
// hands it to DynamicBatcher::Enqueue, which takes it only on OK. Input bytes
// are not owned: they must stay valid until the sink's Finish returns. The
// batcher calls the sink from its scheduler thread, an executor completion
// thread, or Enqueue's caller (a batch formed there that failed at once),
// one call at a time per request.
#ifndef COALESCE_BATCHING_INFERENCE_REQUEST_H_
#define COALESCE_BATCHING_INFERENCE_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "batching/clock.h"
#include "engine/data_type.h"
#include "engine/shape.h"
#include "engine/shared_device_memory.h"

namespace coalesce {

struct RequestInput {
  std::string name;
  DataType dtype = DataType::kInvalid;
  Shape shape;            // Full shape as sent; batch dim first when batching.
  std::string_view data;  // Not owned; valid until the sink's Finish returns.
  // Set instead of `data` when the bytes lie in shared device memory (CUDA
  // shared memory; never for BYTES): an instance on that device copies them
  // into its batch on the device, any other reads them through the host.
  DeviceMemoryRef device;

  size_t byte_size() const { return device ? device.size : data.size(); }
};

// Implemented by the gRPC frontend.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;

  // Adds one output to the response and returns where to write its
  // `byte_size` bytes (may be null when byte_size is 0). Called once per
  // returned output, in the order of InferenceRequest::requested_outputs (the
  // model's output order when that is empty), all before Finish(OkStatus()).
  virtual char* AddOutput(const std::string& name, DataType dtype,
                          const Shape& shape, size_t byte_size) = 0;

  // Instead of AddOutput, for an output of InferenceRequest::device_outputs
  // whose `byte_size` bytes the executor already wrote into that device
  // memory: the output is added with nothing more to write. Only sinks of
  // requests with device_outputs are called this way.
  virtual void AddDeviceOutput(const std::string& name, DataType dtype,
                               const Shape& shape, size_t byte_size) {}

  // Called exactly once, last, from any thread. On a non-OK status the
  // outputs added so far (if any) are to be discarded.
  virtual void Finish(const absl::Status& status) = 0;

  // True once the client went away. Polled by the scheduler; thread-safe.
  virtual bool IsCancelled() const = 0;
};

// A sequence's correlation ID: KServe's `sequence_id` parameter, an unsigned
// integer or a string. 0 and "" mean "no sequence".
using CorrelationId = std::variant<uint64_t, std::string>;

// The sequence parameters of a request to a sequence-batched model.
struct SequenceFlags {
  CorrelationId id = uint64_t{0};
  bool start = false;  // `sequence_start`: the first request of a sequence.
  bool end = false;    // `sequence_end`: the last one.
};

struct InferenceRequest {
  std::string id;
  std::vector<RequestInput> inputs;
  std::vector<std::string> requested_outputs;  // Empty = all, model order.
  // Outputs, by name, that go to shared device memory (CUDA shared memory):
  // an instance on that device writes the request's rows there on the
  // device and calls AddDeviceOutput; any other instance calls AddOutput,
  // and the sink writes the bytes back through the host.
  std::map<std::string, DeviceMemoryRef> device_outputs;
  uint64_t priority = 0;  // 0 (or out of range) = the default level.
  // The `timeout` request parameter; only used when the level's QueuePolicy
  // allows overriding, and then only to shorten the queue timeout.
  std::optional<Clock::Duration> timeout;
  // The gRPC deadline, on the batcher's clock.
  Clock::TimePoint deadline = Clock::TimePoint::max();
  // Set when the request carried any sequence parameter.
  std::optional<SequenceFlags> sequence;
  std::unique_ptr<ResponseSink> sink;  // Required.
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_INFERENCE_REQUEST_H_
