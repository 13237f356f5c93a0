// StreamInferReactor: one ModelStreamInfer call. Reads requests one after
// another, submits each through the InferHandler, and writes the responses
// (or error_message with the request's id) back in the order the requests
// arrived, as Triton does for non-decoupled models: a response that is ready
// early waits for the ones before it. One write in flight at a time, one
// read in flight at a time, and no read while `max_pending` requests are
// read and not yet written (the client is then held back by gRPC's flow
// control).
//
// Lifetime: gRPC owns the reactor until OnDone; requests still queued then
// keep it alive, and the last of OnDone and the last Deliver deletes it.
// Thread-safe: Deliver is called from batcher and executor threads.
#ifndef COALESCE_SERVER_STREAM_INFER_REACTOR_H_
#define COALESCE_SERVER_STREAM_INFER_REACTOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.pb.h"
#include "server/cancel_notifier.h"
#include "server/infer_handler.h"

namespace coalesce {

class StreamInferReactor;

// The live ModelStreamInfer calls of a service, so that shutdown can close
// the ones a client keeps open without sending (gRPC would otherwise wait
// for them until the exit timeout). Thread-safe.
class StreamRegistry {
 public:
  // Registers a new stream; false once CloseAll has run (the stream is then
  // to close as soon as it has nothing pending).
  bool Add(StreamInferReactor* stream);
  void Remove(StreamInferReactor* stream);
  // Tells every live stream, and every later one, to finish once its
  // pending requests are answered: it reads no more requests and ends with
  // UNAVAILABLE "the server is shutting down".
  void CloseAll();

 private:
  absl::Mutex mu_;
  absl::flat_hash_set<StreamInferReactor*> streams_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class StreamInferReactor
    : public grpc::ServerBidiReactor<inference::ModelInferRequest,
                                     inference::ModelStreamInferResponse> {
 public:
  // REQUIRES: `registry` outlives the reactor; max_pending >= 1.
  StreamInferReactor(grpc::CallbackServerContext* context,
                     InferHandler* handler, StreamRegistry* registry,
                     int64_t max_pending);

  // Reads no more requests; finishes with UNAVAILABLE once the pending ones
  // are answered (StreamRegistry::CloseAll).
  void Close();

  // Hands over the finished response of the request read as number
  // `sequence` (0, 1, ...). Called exactly once per request read.
  void Deliver(uint64_t sequence,
               std::unique_ptr<inference::ModelStreamInferResponse> response);

  bool cancelled() const { return cancelled_.load(); }

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void StartNextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the next read unless one is in flight, the stream is ending, or
  // max_pending_ requests are read and not yet written.
  void MaybeStartReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::CallbackServerContext* const context_;
  InferHandler* const handler_;
  StreamRegistry* const registry_;
  const int64_t max_pending_;
  std::atomic<bool> closing_{false};
  // The read buffer: written by gRPC while a read is in flight, then by
  // OnReadDone, which clears read_in_flight_ once the request is submitted.
  inference::ModelInferRequest incoming_;
  std::atomic<bool> cancelled_{false};
  CancelNotifier cancel_notifier_;

  absl::Mutex mu_;
  // Finished responses not yet written, by request sequence number.
  std::map<uint64_t, std::unique_ptr<inference::ModelStreamInferResponse>>
      ready_ ABSL_GUARDED_BY(mu_);
  uint64_t next_to_write_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<inference::ModelStreamInferResponse> writing_
      ABSL_GUARDED_BY(mu_);
  int pending_ ABSL_GUARDED_BY(mu_) = 0;  // read, not yet delivered
  bool read_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 0;  // of the next request read
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_STREAM_INFER_REACTOR_H_
