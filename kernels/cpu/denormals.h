// Denormal (subnormal) float handling of the CPU kernels.
//
// x86 CPUs compute with denormal operands or results through a slow microcode
// path, often 100 times slower per operation. One denormal input value of a
// fully connected layer turns into a row of denormal products, and a request
// of random bits (what perf_analyzer sends as "random" data) carries a few:
// measured on the example MLP, such inputs cost about 12% more compute per
// request. Flushing denormals to zero (MXCSR's FTZ and DAZ bits) removes that
// cost; the price is that values below FLT_MIN (about 1.2e-38) count as 0,
// which no inference result depends on. TensorFlow flushes on its inference
// threads for the same reason; onnxruntime offers it as a session option.
//
// The setting is per thread. SetFlushDenormals applies it to the calling
// thread and to the OpenMP threads that the calling thread's parallel regions
// use (oneDNN's included), so an executor worker calls it once, after
// SetIntraOpThreads (threading.h). Threads the OpenMP runtime creates later
// inherit the creating thread's setting. On CPUs other than x86-64 it does
// nothing and FlushDenormalsSupported() is false.
#ifndef COALESCE_KERNELS_CPU_DENORMALS_H_
#define COALESCE_KERNELS_CPU_DENORMALS_H_

namespace coalesce::kernels {

// Whether this build can change the denormal mode.
bool FlushDenormalsSupported();

// Turns flush-to-zero and denormals-are-zero on (or off) for the calling
// thread and the threads of its OpenMP parallel regions.
void SetFlushDenormals(bool on);

// Whether the calling thread flushes denormals.
bool FlushDenormalsEnabled();

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_DENORMALS_H_
