// StreamInferReactor: one ModelStreamInfer call. Reads requests one after
// another, submits each through the InferHandler, and writes each response
// (or its error_message) back as it completes, in completion order, one write
// in flight at a time.
//
// Lifetime: gRPC owns the reactor until OnDone; requests still queued then
// keep it alive, and the last of OnDone and the last Deliver deletes it.
// Thread-safe: Deliver is called from batcher and executor threads.
#ifndef COALESCE_SERVER_STREAM_INFER_REACTOR_H_
#define COALESCE_SERVER_STREAM_INFER_REACTOR_H_

#include <atomic>
#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.pb.h"
#include "server/infer_handler.h"

namespace coalesce {

class StreamInferReactor
    : public grpc::ServerBidiReactor<inference::ModelInferRequest,
                                     inference::ModelStreamInferResponse> {
 public:
  StreamInferReactor(grpc::CallbackServerContext* context,
                     InferHandler* handler);

  // Queues one finished response for writing. Called once per submitted
  // request.
  void Deliver(std::unique_ptr<inference::ModelStreamInferResponse> response);

  bool cancelled() const { return cancelled_.load(); }

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void StartNextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::CallbackServerContext* const context_;
  InferHandler* const handler_;
  inference::ModelInferRequest incoming_;  // read buffer, reader thread only
  std::atomic<bool> cancelled_{false};

  absl::Mutex mu_;
  std::deque<std::unique_ptr<inference::ModelStreamInferResponse>> to_write_
      ABSL_GUARDED_BY(mu_);
  int pending_ ABSL_GUARDED_BY(mu_) = 0;  // submitted, not yet delivered
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_STREAM_INFER_REACTOR_H_
