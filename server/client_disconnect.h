// ClientDisconnect: tells the handler of an HTTP request that its client
// closed the connection before the answer was written. HTTP/1.1 has no other
// way to cancel a request; the transport (http_server.cc) watches the socket
// of a connection whose request is being handled and fires this once when it
// reads the end of the stream or a reset. The handler reads fired() (an
// inference sink's IsCancelled) and may set one callback run when it fires
// (to wake the batcher that queued the request, as gRPC's cancellation does).
//
// Not detected: a client that pipelines its next request before the answer
// (the watch then sees data and stops) or half-closes its sending side while
// it still reads (read as a close). Thread-safe; the callback runs on the
// firing thread, outside the lock.
#ifndef COALESCE_SERVER_CLIENT_DISCONNECT_H_
#define COALESCE_SERVER_CLIENT_DISCONNECT_H_

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace coalesce {

class ClientDisconnect {
 public:
  bool fired() const;

  // Runs `callback` when the disconnect fires, or now if it already has.
  // Replaces a callback not yet run.
  void OnFire(absl::AnyInvocable<void() &&> callback);

  // The transport saw the client go. Idempotent.
  void Fire();

 private:
  mutable absl::Mutex mu_;
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  absl::AnyInvocable<void() &&> callback_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_CLIENT_DISCONNECT_H_
