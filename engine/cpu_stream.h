// CpuStream: one worker thread that runs enqueued tasks one at a time in FIFO
// order: the CPU counterpart of a device stream (the CPU executor's worker,
// the simulated device's streams, the pipelined executor's waiters). The
// thread first runs the `init` callback when there is one (e.g. to set its
// intra-op thread count). Destruction runs every task already enqueued, then
// joins. Enqueue is thread-safe.
#ifndef COALESCE_ENGINE_CPU_STREAM_H_
#define COALESCE_ENGINE_CPU_STREAM_H_

#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace coalesce {

class CpuStream {
 public:
  using Task = std::function<void()>;

  explicit CpuStream(Task init);
  ~CpuStream();
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;

  void Enqueue(Task task);

 private:
  void Loop(Task init);

  absl::Mutex mu_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CPU_STREAM_H_
