#include "engine/cpu_stream.h"

#include <utility>

namespace coalesce {

CpuStream::CpuStream(Task init)
    : thread_([this, init = std::move(init)]() mutable {
        Loop(std::move(init));
      }) {}

CpuStream::~CpuStream() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void CpuStream::Enqueue(Task task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

void CpuStream::Loop(Task init) {
  if (init) init();
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](CpuStream* s) ABSL_SHARED_LOCKS_REQUIRED(s->mu_) {
            return s->stopping_ || !s->tasks_.empty();
          },
          this));
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace coalesce
