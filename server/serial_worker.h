// SerialWorker: one thread that runs the jobs it is given, in order. For
// work that blocks for long (a model load over HTTP) and must not hold the
// thread that received it (an HTTP io thread serves every connection
// assigned to it). The destructor runs what is queued, then joins.
// Thread-safe.
#ifndef COALESCE_SERVER_SERIAL_WORKER_H_
#define COALESCE_SERVER_SERIAL_WORKER_H_

#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace coalesce {

class SerialWorker {
 public:
  SerialWorker();
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  // Queues `job`; it runs on the worker's thread after those before it.
  void Post(absl::AnyInvocable<void() &&> job);

 private:
  void Run();

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> jobs_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_SERIAL_WORKER_H_
