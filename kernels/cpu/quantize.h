// Linear quantization (ONNX QuantizeLinear / DequantizeLinear) per tensor or
// per channel: a tensor viewed as [outer, channels, inner] with one scale and
// zero point per channel (channels = 1 per tensor). Stateless and
// thread-safe.
#ifndef COALESCE_KERNELS_CPU_QUANTIZE_H_
#define COALESCE_KERNELS_CPU_QUANTIZE_H_

#include <cstdint>

namespace coalesce::kernels {

// out = saturate(round_half_to_even(in / scale) + zero_point) in Q's range.
// Defined for Q = int8_t, uint8_t, int16_t, uint16_t. A null zero_point is 0.
template <typename Q>
void QuantizeLinear(const float* in, int64_t outer, int64_t channels,
                    int64_t inner, const float* scale, const Q* zero_point,
                    Q* out);

// out = (in - zero_point) * scale. Defined for Q = int8_t, uint8_t, int16_t,
// uint16_t, int32_t. A null zero_point is 0.
template <typename Q>
void DequantizeLinear(const Q* in, int64_t outer, int64_t channels,
                      int64_t inner, const float* scale, const Q* zero_point,
                      float* out);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_QUANTIZE_H_
