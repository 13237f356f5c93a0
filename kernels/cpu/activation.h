// Elementwise unary activations on contiguous float arrays:
// out[i] = f(in[i]). `out` may equal `in`. Stateless and thread-safe.
#ifndef COALESCE_KERNELS_CPU_ACTIVATION_H_
#define COALESCE_KERNELS_CPU_ACTIVATION_H_

#include <cstdint>

namespace coalesce::kernels {

void Relu(const float* in, int64_t n, float* out);
void Sigmoid(const float* in, int64_t n, float* out);
void Tanh(const float* in, int64_t n, float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_ACTIVATION_H_
