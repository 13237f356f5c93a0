#include "benchmarks/coalesce_bench/grpc_stream_infer_sender.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmarks/coalesce_bench/grpc_infer_sender.h"

namespace coalesce::bench {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// How long the destructor waits for a closed stream to end before cancelling.
constexpr absl::Duration kCloseGrace = absl::Seconds(10);

}  // namespace

// One ModelStreamInfer call, owned by the sender until OnDone has returned:
// its ClientContext holds a reference to the channel, and gRPC must not see
// the last one of those released on its own callback thread. One hold, taken
// before StartCall, keeps OnDone from running while Add or Close is still
// issuing an operation from outside a reaction; it is released once the stream
// is no longer usable (closed, its reads ended, or cancelled).
class GrpcStreamInferSender::Stream
    : public grpc::ClientBidiReactor<inference::ModelInferRequest,
                                     inference::ModelStreamInferResponse> {
 public:
  // REQUIRES: `pool` outlives the stream.
  explicit Stream(const RequestPool* pool)
      : pool_(pool), vary_(pool->size() > 1), request_(pool->at(0)) {}

  void Start(inference::GRPCInferenceService::Stub* stub) {
    stub->async()->ModelStreamInfer(&context_, this);
    AddHold();
    StartRead(&response_);
    StartCall();
  }

  // Queues one request. False, with `*done` untouched, when the stream can
  // no longer take requests.
  bool Add(uint64_t id, Done* done) {
    {
      absl::MutexLock lock(&mu_);
      if (!usable_) return false;
      pending_.emplace(id, Pending{std::move(*done), Now()});
      to_write_.push_back({id, vary_ ? &pool_->Next() : nullptr});
      if (writing_) return true;
      writing_ = true;
      SetNextIdLocked();
      ++issuing_;
    }
    StartWrite(&request_);
    FinishIssuing();
    return true;
  }

  // Ends the writing side once the last write is out. REQUIRES: no request
  // is pending.
  void Close() {
    bool now = false;
    {
      absl::MutexLock lock(&mu_);
      if (!usable_) return;
      usable_ = false;
      closing_ = true;
      now = !writing_;
      if (now) ++issuing_;
    }
    if (!now) return;  // OnWriteDone sends it
    StartWritesDone();
    FinishIssuing(/*release=*/true);
  }

  // Cancels the stream when its oldest request was sent before `limit`.
  void CancelIfOlderThan(SteadyTime limit) {
    {
      absl::MutexLock lock(&mu_);
      // Ids grow with each send, so the first pending one is the oldest.
      // A stream whose reads have ended is already ending with its own status.
      if (!usable_ || pending_.empty()) return;
      if (pending_.begin()->second.sent >= limit) return;
      timed_out_ = true;
      usable_ = false;  // the lane's next request opens a new stream
    }
    context_.TryCancel();
  }

  void Cancel() { context_.TryCancel(); }

  bool usable() {
    absl::MutexLock lock(&mu_);
    return usable_;
  }

  // True once OnDone has done all it does; waits up to `timeout`. After
  // that the stream may be destroyed.
  bool WaitFinished(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&finished_), timeout);
  }

  bool finished() {
    absl::MutexLock lock(&mu_);
    return finished_;
  }

  void OnWriteDone(bool ok) override {
    bool write = false, writes_done = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) {  // the stream broke; OnDone fails what is pending
        usable_ = false;
        to_write_.clear();
        return;
      }
      if (!to_write_.empty()) {
        writing_ = write = true;
        SetNextIdLocked();
      } else if (closing_) {
        writes_done = true;
      }
    }
    if (write) StartWrite(&request_);
    if (writes_done) {
      StartWritesDone();
      Release();
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the server ended the stream, or it was cancelled
      Release();
      return;
    }
    Done done;
    absl::Status status = response_.error_message().empty()
                              ? absl::OkStatus()
                              : absl::UnknownError(response_.error_message());
    {
      absl::MutexLock lock(&mu_);
      uint64_t id = 0;
      auto it = absl::SimpleAtoi(response_.infer_response().id(), &id)
                    ? pending_.find(id)
                    : pending_.end();
      if (it == pending_.end()) it = pending_.begin();  // the oldest id
      if (it != pending_.end()) {
        done = std::move(it->second.done);
        pending_.erase(it);
      }
    }
    StartRead(&response_);
    if (done) done(status);
  }

  void OnDone(const grpc::Status& grpc_status) override {
    std::map<uint64_t, Pending> failed;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      usable_ = false;
      ended_ = true;
      failed.swap(pending_);
      if (timed_out_) {
        status = absl::DeadlineExceededError(
            "no response within --timeout; the stream was cancelled");
      } else if (!grpc_status.ok()) {
        status = ToAbslStatus(grpc_status);
      } else {
        status = absl::UnavailableError(
            "the server ended the stream before answering");
      }
    }
    for (auto& [id, pending] : failed) pending.done(status);
    failed.clear();  // the callbacks go before the stream may be destroyed
    absl::MutexLock lock(&mu_);
    finished_ = true;  // the last touch of this object by OnDone
  }

 private:
  struct Pending {
    Done done;
    SteadyTime sent;
  };
  // A request waiting for its write: its id, and its variant (null when
  // the pool has one request, already in request_).
  struct ToWrite {
    uint64_t id;
    const inference::ModelInferRequest* variant;
  };

  static SteadyTime Now() { return std::chrono::steady_clock::now(); }

  // The next queued request goes out with its id (and its variant, when the
  // pool has several). The previous write is done: request_ is free.
  void SetNextIdLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const auto [id, variant] = to_write_.front();
    to_write_.pop_front();
    if (variant != nullptr) request_ = *variant;
    request_.set_id(absl::StrCat(id));
  }

  // After an operation issued from outside a reaction: releases the hold if
  // that was asked for meanwhile (or by the caller).
  void FinishIssuing(bool release = false) {
    bool remove = false;
    {
      absl::MutexLock lock(&mu_);
      --issuing_;
      if (release) release_wanted_ = true;
      remove = release_wanted_ && issuing_ == 0 && !hold_released_;
      if (remove) hold_released_ = true;
    }
    if (remove) RemoveHold();
  }

  // The stream takes no more requests; the hold goes once nobody is issuing.
  void Release() {
    bool remove = false;
    {
      absl::MutexLock lock(&mu_);
      usable_ = false;
      release_wanted_ = true;
      remove = issuing_ == 0 && !hold_released_;
      if (remove) hold_released_ = true;
    }
    if (remove) RemoveHold();
  }

  const RequestPool* const pool_;
  const bool vary_;  // the pool has more than one request
  grpc::ClientContext context_;
  // The request being written; its variant and id are set before each write.
  inference::ModelInferRequest request_;
  inference::ModelStreamInferResponse response_;

  absl::Mutex mu_;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::deque<ToWrite> to_write_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool usable_ ABSL_GUARDED_BY(mu_) = true;
  bool timed_out_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;     // OnDone began
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // OnDone is over
  int issuing_ ABSL_GUARDED_BY(mu_) = 0;
  bool release_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
};

GrpcStreamInferSender::GrpcStreamInferSender(
    const Options& options, inference::ModelInferRequest request)
    : GrpcStreamInferSender(
          options,
          std::make_shared<const RequestPool>(
              std::vector<inference::ModelInferRequest>{std::move(request)})) {}

GrpcStreamInferSender::GrpcStreamInferSender(
    const Options& options, std::shared_ptr<const RequestPool> pool)
    : timeout_(options.timeout), pool_(std::move(pool)) {
  for (int i = 0; i < options.channels; ++i) {
    stubs_.push_back(inference::GRPCInferenceService::NewStub(
        CreateBenchChannel(options.url, i)));
  }
  watchdog_ = std::thread([this] { WatchDeadlines(); });
}

GrpcStreamInferSender::~GrpcStreamInferSender() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [lane, stream] : streams_) streams.push_back(stream);
    streams.insert(streams.end(), retired_.begin(), retired_.end());
    streams_.clear();
    retired_.clear();
  }
  watchdog_.join();
  for (auto& stream : streams) stream->Close();
  // One grace period for all: streams the server has not ended by then are
  // cancelled together, and a cancelled call always reaches OnDone.
  const absl::Time deadline = absl::Now() + kCloseGrace;
  for (auto& stream : streams) {
    if (!stream->WaitFinished(
            std::max(deadline - absl::Now(), absl::ZeroDuration()))) {
      stream->Cancel();
    }
  }
  for (auto& stream : streams) stream->WaitFinished(absl::InfiniteDuration());
  streams.clear();  // every context goes before the channels (stubs_)
}

std::shared_ptr<GrpcStreamInferSender::Stream> GrpcStreamInferSender::StreamFor(
    int lane) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return nullptr;  // a Send racing the destructor
  std::shared_ptr<Stream>& stream = streams_[lane];
  if (stream == nullptr || !stream->usable()) {
    // Ended streams are kept until OnDone is over, then dropped here.
    retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                  [](const std::shared_ptr<Stream>& s) {
                                    return s->finished();
                                  }),
                   retired_.end());
    if (stream != nullptr) retired_.push_back(std::move(stream));
    stream = std::make_shared<Stream>(pool_.get());
    stream->Start(stubs_[static_cast<size_t>(lane) % stubs_.size()].get());
  }
  return stream;
}

void GrpcStreamInferSender::Send(int lane, Done done) {
  std::shared_ptr<Stream> stream = StreamFor(lane);
  if (stream != nullptr && stream->Add(next_id_.fetch_add(1), &done)) return;
  done(absl::UnavailableError("the request's stream ended before it was sent"));
}

void GrpcStreamInferSender::WatchDeadlines() {
  const auto period = std::clamp<std::chrono::milliseconds>(
      timeout_ / 4, std::chrono::milliseconds(10),
      std::chrono::milliseconds(250));
  for (;;) {
    std::vector<std::shared_ptr<Stream>> streams;
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                               absl::FromChrono(period))) {
        return;
      }
      for (auto& [lane, stream] : streams_) streams.push_back(stream);
    }
    // Unlocked: a cancel may complete requests, whose callbacks send again.
    const SteadyTime limit = std::chrono::steady_clock::now() - timeout_;
    for (auto& stream : streams) stream->CancelIfOlderThan(limit);
  }
}

}  // namespace coalesce::bench
