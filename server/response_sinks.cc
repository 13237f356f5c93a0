#include "server/response_sinks.h"

#include <utility>

#include "server/status_convert.h"
#include "server/stream_infer_reactor.h"

namespace coalesce {

char* ProtoResponseSink::AddOutput(const std::string& name, DataType dtype,
                                   const Shape& shape, size_t byte_size) {
  auto* output = response_->add_outputs();
  output->set_name(name);
  output->set_datatype(std::string(DataTypeName(dtype)));
  for (int64_t d : shape) output->add_shape(d);
  std::string* raw = response_->add_raw_output_contents();
  raw->resize(byte_size);
  return raw->data();
}

void UnaryResponseSink::Finish(const absl::Status& status) {
  reactor_->Finish(ToGrpcStatus(status));
}

StreamResponseSink::StreamResponseSink(
    StreamInferReactor* stream,
    std::unique_ptr<inference::ModelInferRequest> request)
    : StreamResponseSink(
          stream, std::move(request),
          std::make_unique<inference::ModelStreamInferResponse>()) {}

StreamResponseSink::StreamResponseSink(
    StreamInferReactor* stream,
    std::unique_ptr<inference::ModelInferRequest> request,
    std::unique_ptr<inference::ModelStreamInferResponse> message)
    : ProtoResponseSink(message->mutable_infer_response()),
      stream_(stream),
      request_(std::move(request)),
      message_(std::move(message)) {}

void StreamResponseSink::Finish(const absl::Status& status) {
  if (!status.ok()) {
    message_->clear_infer_response();
    message_->set_error_message(std::string(status.message()));
  }
  stream_->Deliver(std::move(message_));
}

bool StreamResponseSink::IsCancelled() const { return stream_->cancelled(); }

}  // namespace coalesce
