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

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_THREADING_H_
