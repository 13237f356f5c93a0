// Intra-op threading of the CPU kernels.
//
// The kernels (and oneDNN, which Debian builds with the OpenMP runtime) run
// their parallel regions on OpenMP. OpenMP's thread-count setting is per
// calling thread, so each executor worker thread calls SetIntraOpThreads once
// and every kernel it then runs uses at most that many threads. Other threads
// are unaffected. Thread-safe.
#ifndef COALESCE_KERNELS_CPU_THREADING_H_
#define COALESCE_KERNELS_CPU_THREADING_H_

namespace coalesce::kernels {

// Limits the parallel regions started from the calling thread to `threads`
// threads (values below 1 count as 1).
void SetIntraOpThreads(int threads);

// The limit in effect for the calling thread.
int IntraOpThreads();

// Sets the calling thread's limit for its lifetime and restores the one
// before. Load-time work that runs kernels on a thread that is not an
// executor's (a model check on the loading thread) uses 1, so that OpenMP
// starts no pool of threads there: each such pool makes the runtime spin
// less in every other (it counts more threads than cores), and small
// parallel regions then pay a futex wake each (measured: bert-base's
// attention products 7x slower on 2 cores).
class ScopedIntraOpThreads {
 public:
  explicit ScopedIntraOpThreads(int threads) : before_(IntraOpThreads()) {
    SetIntraOpThreads(threads);
  }
  ~ScopedIntraOpThreads() { SetIntraOpThreads(before_); }
  ScopedIntraOpThreads(const ScopedIntraOpThreads&) = delete;
  ScopedIntraOpThreads& operator=(const ScopedIntraOpThreads&) = delete;

 private:
  const int before_;
};

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_THREADING_H_
