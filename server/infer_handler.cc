#include "server/infer_handler.h"

#include <utility>

#include "absl/strings/str_cat.h"
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

absl::Status InferHandler::Enqueue(const inference::ModelInferRequest& proto,
                                   inference::ModelInferResponse* response,
                                   std::shared_ptr<ServedModel>* served,
                                   std::unique_ptr<InferenceRequest>* request) {
  // The response must be complete before Enqueue: once queued, the request
  // may finish on another thread at any moment.
  response->set_model_version(std::to_string((*served)->version));
  absl::Status status = (*served)->Enqueue(request);
  if (status.code() != absl::StatusCode::kUnavailable) return status;
  // Unavailable is also what a batcher that is being shut down answers: a
  // reload or unload raced with this request. Ask again.
  auto now_serving = manager_->Find(proto.model_name(), proto.model_version());
  if (!now_serving.ok()) return now_serving.status();
  if (*now_serving == *served) return status;
  *served = *std::move(now_serving);
  response->set_model_version(std::to_string((*served)->version));
  return (*served)->Enqueue(request);
}

absl::StatusOr<std::map<std::string, SharedMemorySpan>>
InferHandler::OutputRegions(const inference::ModelInferRequest& proto,
                            const std::map<std::string, int64_t>& top_k) const {
  std::map<std::string, SharedMemorySpan> regions;
  for (const auto& output : proto.outputs()) {
    auto ref = SharedMemoryRefOf(output.parameters(), "output", output.name());
    if (!ref.ok()) return ref.status();
    if (!ref->has_value()) continue;
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("output '", output.name(), "': ", what));
    };
    if (shared_memory_ == nullptr) {
      return error("shared memory is not available here");
    }
    if (top_k.contains(output.name())) {
      return error("classification results cannot go to shared memory");
    }
    auto span = shared_memory_->TensorSpan((*ref)->region, (*ref)->offset,
                                           (*ref)->byte_size);
    if (!span.ok()) return error(span.status().message());
    regions[output.name()] = *std::move(span);
  }
  return regions;
}

std::shared_ptr<ServedModel> InferHandler::Submit(
    const inference::ModelInferRequest& proto,
    std::chrono::system_clock::time_point deadline,
    std::unique_ptr<ProtoResponseSink> sink) {
  if (budget_ != nullptr) {
    auto lease = budget_->Acquire(static_cast<int64_t>(proto.ByteSizeLong()));
    if (!lease.ok()) {
      sink->Finish(lease.status());
      return nullptr;
    }
    sink->set_lease(*std::move(lease));
  }
  auto served = manager_->Find(proto.model_name(), proto.model_version());
  if (!served.ok()) {
    sink->Finish(served.status());
    return nullptr;
  }
  inference::ModelInferResponse* response = sink->response();
  response->set_model_name(proto.model_name());
  response->set_id(proto.id());

  auto request = std::make_unique<InferenceRequest>();
  if (absl::Status s =
          DecodeInferRequest(proto, sink->converted(), request.get(),
                             shared_memory_, sink->input_spans());
      !s.ok()) {
    sink->Finish(s);
    return nullptr;
  }
  auto top_k = ReadClassificationParameters(proto);
  if (!top_k.ok()) {
    sink->Finish(top_k.status());
    return nullptr;
  }
  auto regions = OutputRegions(proto, *top_k);
  if (!regions.ok()) {
    sink->Finish(regions.status());
    return nullptr;
  }
  for (const auto& [name, span] : *regions) {
    if (span.device) request->device_outputs[name] = span.device;
  }
  if (!regions->empty()) sink->set_output_regions(*std::move(regions));
  if (!top_k->empty()) {
    sink->set_classification(ClassificationRequest{
        *std::move(top_k), (*served)->config.max_batch_size() > 0,
        (*served)->labels});
  }
  request->deadline = ToClockDeadline(deadline);
  ProtoResponseSink* raw_sink = sink.get();
  request->sink = std::move(sink);
  std::shared_ptr<ServedModel> model = *std::move(served);
  if (absl::Status s = Enqueue(proto, response, &model, &request); !s.ok()) {
    // Not consumed: the request and its sink are still ours to answer.
    raw_sink->Finish(s);
    return nullptr;
  }
  return model;
}

}  // namespace coalesce
