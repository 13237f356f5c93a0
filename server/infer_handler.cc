#include "server/infer_handler.h"

#include <utility>

#include "server/infer_request_decoder.h"

namespace coalesce {

Clock::TimePoint InferHandler::ToClockDeadline(
    std::chrono::system_clock::time_point deadline) const {
  const auto now = std::chrono::system_clock::now();
  // gRPC reports "no deadline" as a far-future time point.
  if (deadline >= now + std::chrono::hours(24 * 365)) {
    return Clock::TimePoint::max();
  }
  return clock_->Now() +
         std::chrono::duration_cast<Clock::Duration>(deadline - now);
}

void InferHandler::Submit(const inference::ModelInferRequest& proto,
                          std::chrono::system_clock::time_point deadline,
                          std::unique_ptr<ProtoResponseSink> sink) {
  auto served = manager_->Find(proto.model_name(), proto.model_version());
  if (!served.ok()) {
    sink->Finish(served.status());
    return;
  }
  inference::ModelInferResponse* response = sink->response();
  response->set_model_name(proto.model_name());
  response->set_model_version(std::to_string((*served)->version));
  response->set_id(proto.id());

  auto request = std::make_unique<InferenceRequest>();
  if (absl::Status s =
          DecodeInferRequest(proto, sink->converted(), request.get());
      !s.ok()) {
    sink->Finish(s);
    return;
  }
  request->deadline = ToClockDeadline(deadline);
  ProtoResponseSink* raw_sink = sink.get();
  request->sink = std::move(sink);
  if (absl::Status s = (*served)->batcher->Enqueue(&request); !s.ok()) {
    // Not consumed: the request and its sink are still ours to answer.
    raw_sink->Finish(s);
  }
}

}  // namespace coalesce
