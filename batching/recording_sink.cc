#include "batching/recording_sink.h"

namespace coalesce {

absl::Status SinkRecord::AwaitFinish() const {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return status_.has_value();
  };
  mu_.Await(absl::Condition(&done));
  return *status_;
}

bool SinkRecord::finished() const {
  absl::MutexLock lock(&mu_);
  return status_.has_value();
}

int SinkRecord::finish_calls() const {
  absl::MutexLock lock(&mu_);
  return finish_calls_;
}

std::deque<SinkRecord::Output> SinkRecord::outputs() const {
  absl::MutexLock lock(&mu_);
  return outputs_;
}

char* RecordingSink::AddOutput(const std::string& name, DataType dtype,
                               const Shape& shape, size_t byte_size) {
  absl::MutexLock lock(&record_->mu_);
  record_->outputs_.push_back(SinkRecord::Output{
      name, dtype, shape, std::string(byte_size, '\0'), byte_size});
  return record_->outputs_.back().data.data();
}

void RecordingSink::AddDeviceOutput(const std::string& name, DataType dtype,
                                    const Shape& shape, size_t byte_size) {
  absl::MutexLock lock(&record_->mu_);
  record_->outputs_.push_back(
      SinkRecord::Output{name, dtype, shape, "", byte_size, true});
}

void RecordingSink::Finish(const absl::Status& status) {
  absl::MutexLock lock(&record_->mu_);
  ++record_->finish_calls_;
  record_->status_ = status;
}

}  // namespace coalesce
