// Numerically stable softmax and log-softmax over one axis of a float tensor
// viewed as [outer, axis, inner] (row-major). `out` may equal `in`. Stateless
// and thread-safe.
#ifndef COALESCE_KERNELS_CPU_SOFTMAX_H_
#define COALESCE_KERNELS_CPU_SOFTMAX_H_

#include <cstdint>

namespace coalesce::kernels {

// out[o, a, i] = exp(in[o, a, i] - max_a) / sum_a exp(in[o, a, i] - max_a)
void Softmax(const float* in, int64_t outer, int64_t axis, int64_t inner,
             float* out);

// out[o, a, i] = in[o, a, i] - max_a - log(sum_a exp(in[o, a, i] - max_a))
void LogSoftmax(const float* in, int64_t outer, int64_t axis, int64_t inner,
                float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_SOFTMAX_H_
