#include "kernels/cpu/argmax.h"

namespace coalesce::kernels {

template <typename T>
void ArgMax(const T* src, int64_t outer, int64_t axis_dim, int64_t inner,
            bool select_last, int64_t* out) {
  for (int64_t o = 0; o < outer; ++o) {
    const T* block = src + o * axis_dim * inner;
    int64_t* best = out + o * inner;
    for (int64_t i = 0; i < inner; ++i) best[i] = 0;
    // Row by row so the inner dimension is read contiguously.
    for (int64_t k = 1; k < axis_dim; ++k) {
      const T* row = block + k * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const T current = block[best[i] * inner + i];
        if (row[i] > current || (select_last && row[i] == current)) best[i] = k;
      }
    }
  }
}

template void ArgMax<float>(const float*, int64_t, int64_t, int64_t, bool,
                            int64_t*);
template void ArgMax<int64_t>(const int64_t*, int64_t, int64_t, int64_t, bool,
                              int64_t*);
template void ArgMax<int32_t>(const int32_t*, int64_t, int64_t, int64_t, bool,
                              int64_t*);

}  // namespace coalesce::kernels
