#include "kernels/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace coalesce::kernels {

template <typename Q>
void QuantizeLinear(const float* in, int64_t outer, int64_t channels,
                    int64_t inner, const float* scale, const Q* zero_point,
                    Q* out) {
  constexpr float kLow = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float kHigh = static_cast<float>(std::numeric_limits<Q>::max());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float s = scale[c];
      const float zp = zero_point != nullptr ? zero_point[c] : 0.0f;
      const int64_t base = (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        // nearbyint rounds half to even in the default rounding mode; NaN
        // saturates to the zero point's side as onnxruntime does (to 0).
        float q = std::nearbyint(in[base + i] / s) + zp;
        if (std::isnan(q)) q = 0.0f;
        out[base + i] = static_cast<Q>(std::clamp(q, kLow, kHigh));
      }
    }
  }
}

template <typename Q>
void DequantizeLinear(const Q* in, int64_t outer, int64_t channels,
                      int64_t inner, const float* scale, const Q* zero_point,
                      float* out) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float s = scale[c];
      const int64_t zp = zero_point != nullptr ? zero_point[c] : 0;
      const int64_t base = (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        out[base + i] = static_cast<float>(int64_t{in[base + i]} - zp) * s;
      }
    }
  }
}

#define COALESCE_INSTANTIATE_Q(Q)                                          \
  template void QuantizeLinear<Q>(const float*, int64_t, int64_t, int64_t, \
                                  const float*, const Q*, Q*);
#define COALESCE_INSTANTIATE_DQ(Q)                                       \
  template void DequantizeLinear<Q>(const Q*, int64_t, int64_t, int64_t, \
                                    const float*, const Q*, float*);
COALESCE_INSTANTIATE_Q(int8_t)
COALESCE_INSTANTIATE_Q(uint8_t)
COALESCE_INSTANTIATE_Q(int16_t)
COALESCE_INSTANTIATE_Q(uint16_t)
COALESCE_INSTANTIATE_DQ(int8_t)
COALESCE_INSTANTIATE_DQ(uint8_t)
COALESCE_INSTANTIATE_DQ(int16_t)
COALESCE_INSTANTIATE_DQ(uint16_t)
COALESCE_INSTANTIATE_DQ(int32_t)
#undef COALESCE_INSTANTIATE_Q
#undef COALESCE_INSTANTIATE_DQ

}  // namespace coalesce::kernels
