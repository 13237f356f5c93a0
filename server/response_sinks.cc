#include "server/response_sinks.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/status_convert.h"
#include "server/stream_infer_reactor.h"

namespace coalesce {

namespace {

// Adds output metadata to `response`; returns its raw_output_contents entry.
std::string* AddResponseOutput(inference::ModelInferResponse* response,
                               const std::string& name, DataType dtype,
                               const Shape& shape) {
  auto* output = response->add_outputs();
  output->set_name(name);
  output->set_datatype(std::string(DataTypeName(dtype)));
  for (int64_t d : shape) output->add_shape(d);
  return response->add_raw_output_contents();
}

}  // namespace

char* ProtoResponseSink::AddOutput(const std::string& name, DataType dtype,
                                   const Shape& shape, size_t byte_size) {
  std::string* raw = AddResponseOutput(response_, name, dtype, shape);
  auto region = output_regions_.find(name);
  if (region == output_regions_.end()) {
    raw->resize(byte_size);
    return raw->data();
  }
  if (byte_size <= region->second.size && region->second.device) {
    std::string& host = written_back_[name];
    host.resize(byte_size);
    return host.data();
  }
  if (byte_size <= region->second.size) return region->second.data;
  if (output_error_.ok()) {
    output_error_ = absl::InvalidArgumentError(absl::StrCat(
        "output '", name, "': ", byte_size,
        " bytes do not fit its shared memory span of ", region->second.size));
  }
  scratch_.resize(byte_size);
  return scratch_.data();
}

void ProtoResponseSink::AddDeviceOutput(const std::string& name, DataType dtype,
                                        const Shape& shape, size_t byte_size) {
  AddResponseOutput(response_, name, dtype, shape);
}

absl::Status ProtoResponseSink::Finalize(const absl::Status& status) {
  // Returned before the answer leaves, so a client's next request never
  // finds this one's bytes still counted.
  lease_ = InflightBudget::Lease();
  if (!status.ok()) return status;
  if (!output_error_.ok()) return output_error_;
  for (const auto& [name, host] : written_back_) {
    const DeviceMemoryRef& ref = output_regions_[name].device;
    absl::Status s = ref.memory->Write(ref.offset, host.data(), host.size());
    if (!s.ok()) {
      return absl::Status(
          s.code(),
          absl::StrCat("output '", name,
                       "': writing CUDA shared memory: ", s.message()));
    }
  }
  if (classification_.top_k.empty()) return status;
  return ApplyClassification(classification_, response_);
}

void UnaryResponseSink::Finish(const absl::Status& status) {
  reactor_->Finish(ToGrpcStatus(Finalize(status)));
}

StreamResponseSink::StreamResponseSink(
    StreamInferReactor* stream, uint64_t sequence,
    std::unique_ptr<inference::ModelInferRequest> request)
    : StreamResponseSink(
          stream, sequence, std::move(request),
          std::make_unique<inference::ModelStreamInferResponse>()) {}

StreamResponseSink::StreamResponseSink(
    StreamInferReactor* stream, uint64_t sequence,
    std::unique_ptr<inference::ModelInferRequest> request,
    std::unique_ptr<inference::ModelStreamInferResponse> message)
    : ProtoResponseSink(message->mutable_infer_response()),
      stream_(stream),
      sequence_(sequence),
      request_(std::move(request)),
      message_(std::move(message)) {}

void StreamResponseSink::Finish(const absl::Status& result) {
  const absl::Status status = Finalize(result);
  if (!status.ok()) {
    // Only the error and which request it answers (as Triton does).
    message_->clear_infer_response();
    message_->set_error_message(std::string(status.message()));
    auto* header = message_->mutable_infer_response();
    header->set_id(request_->id());
    header->set_model_name(request_->model_name());
    header->set_model_version(request_->model_version());
  }
  stream_->Deliver(sequence_, std::move(message_));
}

bool StreamResponseSink::IsCancelled() const { return stream_->cancelled(); }

}  // namespace coalesce
