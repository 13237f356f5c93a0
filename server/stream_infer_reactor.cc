#include "server/stream_infer_reactor.h"

#include <utility>

#include "server/response_sinks.h"

namespace coalesce {

StreamInferReactor::StreamInferReactor(grpc::CallbackServerContext* context,
                                       InferHandler* handler)
    : context_(context), handler_(handler) {
  StartRead(&incoming_);
}

void StreamInferReactor::OnReadDone(bool ok) {
  if (!ok) {
    absl::MutexLock lock(&mu_);
    reads_done_ = true;
    MaybeFinishLocked();
    return;
  }
  auto request = std::make_unique<inference::ModelInferRequest>();
  request->Swap(&incoming_);
  {
    absl::MutexLock lock(&mu_);
    ++pending_;
  }
  auto sink = std::make_unique<StreamResponseSink>(this, std::move(request));
  const inference::ModelInferRequest& proto = sink->request();
  handler_->Submit(proto, context_->deadline(), std::move(sink));
  StartRead(&incoming_);
}

void StreamInferReactor::Deliver(
    std::unique_ptr<inference::ModelStreamInferResponse> response) {
  bool delete_now = false;
  {
    absl::MutexLock lock(&mu_);
    --pending_;
    if (!finish_called_) {
      to_write_.push_back(std::move(response));
      if (!writing_) StartNextWriteLocked();
    }
    MaybeFinishLocked();
    delete_now = done_ && pending_ == 0;
  }
  if (delete_now) delete this;
}

void StreamInferReactor::StartNextWriteLocked() {
  if (to_write_.empty() || cancelled_.load()) return;
  writing_ = true;
  StartWrite(to_write_.front().get());
}

void StreamInferReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  to_write_.pop_front();
  if (!ok) cancelled_.store(true);
  StartNextWriteLocked();
  MaybeFinishLocked();
}

void StreamInferReactor::OnCancel() {
  cancelled_.store(true);
  absl::MutexLock lock(&mu_);
  MaybeFinishLocked();
}

void StreamInferReactor::MaybeFinishLocked() {
  if (finish_called_ || writing_) return;
  const bool drained = reads_done_ && pending_ == 0 && to_write_.empty();
  if (!drained && !cancelled_.load()) return;
  finish_called_ = true;
  Finish(cancelled_.load() ? grpc::Status::CANCELLED : grpc::Status::OK);
}

void StreamInferReactor::OnDone() {
  bool delete_now = false;
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
    delete_now = pending_ == 0;
  }
  if (delete_now) delete this;
}

}  // namespace coalesce
