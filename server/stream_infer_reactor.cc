#include "server/stream_infer_reactor.h"

#include <utility>

#include "server/response_sinks.h"

namespace coalesce {

bool StreamRegistry::Add(StreamInferReactor* stream) {
  absl::MutexLock lock(&mu_);
  streams_.insert(stream);
  return !closed_;
}

void StreamRegistry::Remove(StreamInferReactor* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

void StreamRegistry::CloseAll() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  // Lock order: registry, then a reactor's own mutex (as in OnDone).
  for (StreamInferReactor* stream : streams_) stream->Close();
}

StreamInferReactor::StreamInferReactor(grpc::CallbackServerContext* context,
                                       InferHandler* handler,
                                       StreamRegistry* registry,
                                       int64_t max_pending)
    : context_(context),
      handler_(handler),
      registry_(registry),
      max_pending_(max_pending) {
  if (!registry_->Add(this)) {
    Close();
    return;
  }
  absl::MutexLock lock(&mu_);
  MaybeStartReadLocked();
}

void StreamInferReactor::Close() {
  closing_.store(true);
  absl::MutexLock lock(&mu_);
  MaybeFinishLocked();
}

void StreamInferReactor::OnReadDone(bool ok) {
  if (!ok) {
    absl::MutexLock lock(&mu_);
    read_in_flight_ = false;
    reads_done_ = true;
    MaybeFinishLocked();
    return;
  }
  auto request = std::make_unique<inference::ModelInferRequest>();
  request->Swap(&incoming_);
  uint64_t sequence = 0;
  {
    absl::MutexLock lock(&mu_);
    ++pending_;
    sequence = next_sequence_++;
  }
  auto sink =
      std::make_unique<StreamResponseSink>(this, sequence, std::move(request));
  const inference::ModelInferRequest& proto = sink->request();
  cancel_notifier_.Add(
      handler_->Submit(proto, context_->deadline(), std::move(sink)));
  // Only now may the next read start (OnWriteDone starts it too when the
  // stream was full): requests reach the batchers in the order they
  // arrived, which sequence batching depends on.
  absl::MutexLock lock(&mu_);
  read_in_flight_ = false;
  MaybeStartReadLocked();
}

void StreamInferReactor::MaybeStartReadLocked() {
  if (read_in_flight_ || reads_done_ || finish_called_ || cancelled_.load() ||
      closing_.load()) {
    return;
  }
  const int64_t unwritten = pending_ + static_cast<int64_t>(ready_.size()) +
                            (writing_ != nullptr ? 1 : 0);
  if (unwritten >= max_pending_) return;
  read_in_flight_ = true;
  StartRead(&incoming_);
}

void StreamInferReactor::Deliver(
    uint64_t sequence,
    std::unique_ptr<inference::ModelStreamInferResponse> response) {
  bool delete_now = false;
  {
    absl::MutexLock lock(&mu_);
    --pending_;
    if (!finish_called_) {
      ready_[sequence] = std::move(response);
      StartNextWriteLocked();
    }
    MaybeFinishLocked();
    delete_now = done_ && pending_ == 0;
  }
  if (delete_now) delete this;
}

void StreamInferReactor::StartNextWriteLocked() {
  if (writing_ != nullptr || cancelled_.load()) return;
  auto next = ready_.find(next_to_write_);
  if (next == ready_.end()) return;
  writing_ = std::move(next->second);
  ready_.erase(next);
  ++next_to_write_;
  StartWrite(writing_.get());
}

void StreamInferReactor::OnWriteDone(bool ok) {
  if (!ok) {
    // The client is gone: its queued requests need not run. (Outside mu_:
    // the batchers call Deliver, which takes it.)
    cancelled_.store(true);
    cancel_notifier_.NotifyAll();
  }
  absl::MutexLock lock(&mu_);
  writing_.reset();
  StartNextWriteLocked();
  MaybeFinishLocked();
  MaybeStartReadLocked();
}

void StreamInferReactor::OnCancel() {
  cancelled_.store(true);
  cancel_notifier_.NotifyAll();
  absl::MutexLock lock(&mu_);
  MaybeFinishLocked();
}

void StreamInferReactor::MaybeFinishLocked() {
  if (finish_called_ || writing_ != nullptr) return;
  const bool closing = closing_.load() && !reads_done_;
  const bool drained =
      (reads_done_ || closing) && pending_ == 0 && ready_.empty();
  if (!drained && !cancelled_.load()) return;
  finish_called_ = true;
  if (cancelled_.load()) {
    Finish(grpc::Status::CANCELLED);
  } else if (closing) {
    Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the server is shutting down"));
  } else {
    Finish(grpc::Status::OK);
  }
}

void StreamInferReactor::OnDone() {
  registry_->Remove(this);
  bool delete_now = false;
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
    delete_now = pending_ == 0;
  }
  if (delete_now) delete this;
}

}  // namespace coalesce
