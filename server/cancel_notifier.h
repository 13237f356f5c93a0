// CancelNotifier: remembers which models one RPC queued requests on, so that
// when its client cancels, those batchers answer the cancelled requests at
// once instead of when they next look. Holds weak references only.
// Thread-safe.
#ifndef COALESCE_SERVER_CANCEL_NOTIFIER_H_
#define COALESCE_SERVER_CANCEL_NOTIFIER_H_

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/served_model.h"

namespace coalesce {

class CancelNotifier {
 public:
  // Remembers `model` (once). A null model is ignored.
  void Add(const std::shared_ptr<ServedModel>& model);

  // Wakes the batcher of every remembered model that still exists.
  void NotifyAll();

 private:
  absl::Mutex mu_;
  std::vector<std::weak_ptr<ServedModel>> models_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_CANCEL_NOTIFIER_H_
