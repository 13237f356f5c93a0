// UnaryInferReactor: the reactor of one unary ModelInfer call. Finished by
// the call's UnaryResponseSink; tells the batcher at once when the client
// cancels. Owned by gRPC; deletes itself in OnDone.
#ifndef COALESCE_SERVER_UNARY_INFER_REACTOR_H_
#define COALESCE_SERVER_UNARY_INFER_REACTOR_H_

#include "grpcpp/grpcpp.h"
#include "server/cancel_notifier.h"

namespace coalesce {

class UnaryInferReactor : public grpc::ServerUnaryReactor {
 public:
  CancelNotifier* cancel_notifier() { return &cancel_notifier_; }

  void OnCancel() override { cancel_notifier_.NotifyAll(); }
  void OnDone() override { delete this; }

 private:
  CancelNotifier cancel_notifier_;
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_UNARY_INFER_REACTOR_H_
