#include "kernels/cpu/indexing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace coalesce::kernels {

template <typename Index>
absl::Status GatherElements(const void* src,
                            const std::vector<int64_t>& src_dims,
                            size_t element_bytes, const Index* indices,
                            const std::vector<int64_t>& index_dims,
                            int64_t axis, void* out) {
  const char* from = static_cast<const char*>(src);
  char* to = static_cast<char*>(out);
  return ForEachAlongAxis(
      src_dims, indices, index_dims, axis, [&](int64_t i, int64_t offset) {
        std::memcpy(to + i * element_bytes, from + offset * element_bytes,
                    element_bytes);
      });
}

template absl::Status GatherElements<int64_t>(const void*,
                                              const std::vector<int64_t>&,
                                              size_t, const int64_t*,
                                              const std::vector<int64_t>&,
                                              int64_t, void*);
template absl::Status GatherElements<int32_t>(const void*,
                                              const std::vector<int64_t>&,
                                              size_t, const int32_t*,
                                              const std::vector<int64_t>&,
                                              int64_t, void*);

namespace {

// The element offset of the slice a k-tuple selects in `dims` (row-major),
// or InvalidArgument for an index out of range.
template <typename Index>
absl::StatusOr<int64_t> TupleOffset(const std::vector<int64_t>& dims,
                                    const Index* tuple, int64_t k) {
  int64_t offset = 0;
  for (int64_t d = 0; d < k; ++d) {
    int64_t index = static_cast<int64_t>(tuple[d]);
    if (index < -dims[d] || index >= dims[d]) {
      return absl::InvalidArgumentError(
          absl::StrCat("index ", index, " is out of range for dimension ", d,
                       " of size ", dims[d]));
    }
    if (index < 0) index += dims[d];
    offset = offset * dims[d] + index;
  }
  for (size_t d = k; d < dims.size(); ++d) offset *= dims[d];
  return offset;
}

int64_t ElementsFrom(const std::vector<int64_t>& dims, size_t begin) {
  int64_t n = 1;
  for (size_t d = begin; d < dims.size(); ++d) n *= dims[d];
  return n;
}

}  // namespace

template <typename Index>
absl::Status GatherND(const void* data, int64_t batch,
                      const std::vector<int64_t>& data_dims,
                      size_t element_bytes, const Index* indices,
                      int64_t tuples, int64_t k, void* out) {
  const int64_t batch_elements = ElementsFrom(data_dims, 0);
  const size_t slice_bytes = ElementsFrom(data_dims, k) * element_bytes;
  const char* from = static_cast<const char*>(data);
  char* to = static_cast<char*>(out);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tuples; ++t) {
      absl::StatusOr<int64_t> offset =
          TupleOffset(data_dims, indices + (b * tuples + t) * k, k);
      if (!offset.ok()) return offset.status();
      std::memcpy(to, from + (b * batch_elements + *offset) * element_bytes,
                  slice_bytes);
      to += slice_bytes;
    }
  }
  return absl::OkStatus();
}

template <typename Index>
absl::Status ScatterND(const std::vector<int64_t>& data_dims,
                       size_t element_bytes, const Index* indices,
                       int64_t tuples, int64_t k, const void* updates,
                       void* out) {
  const size_t slice_bytes = ElementsFrom(data_dims, k) * element_bytes;
  const char* from = static_cast<const char*>(updates);
  char* to = static_cast<char*>(out);
  for (int64_t t = 0; t < tuples; ++t) {
    absl::StatusOr<int64_t> offset = TupleOffset(data_dims, indices + t * k, k);
    if (!offset.ok()) return offset.status();
    std::memcpy(to + *offset * element_bytes, from + t * slice_bytes,
                slice_bytes);
  }
  return absl::OkStatus();
}

#define COALESCE_INSTANTIATE(Index)                                            \
  template absl::Status GatherND<Index>(                                       \
      const void*, int64_t, const std::vector<int64_t>&, size_t, const Index*, \
      int64_t, int64_t, void*);                                                \
  template absl::Status ScatterND<Index>(const std::vector<int64_t>&, size_t,  \
                                         const Index*, int64_t, int64_t,       \
                                         const void*, void*);
COALESCE_INSTANTIATE(int64_t)
COALESCE_INSTANTIATE(int32_t)
#undef COALESCE_INSTANTIATE

template <typename T>
void TopK(const T* in, int64_t outer, int64_t dim, int64_t inner, int64_t k,
          bool largest, T* values, int64_t* indices) {
  std::vector<int64_t> order(dim);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* x = in + o * dim * inner + j;
      for (int64_t i = 0; i < dim; ++i) order[i] = i;
      // NaN ranks above every number (as torch.topk), ties by position.
      auto before = [&](int64_t a, int64_t b) {
        const T va = x[a * inner], vb = x[b * inner];
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(va) || std::isnan(vb)) {
            if (std::isnan(va) && std::isnan(vb)) return a < b;
            return largest ? std::isnan(va) : std::isnan(vb);
          }
        }
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t r = 0; r < k; ++r) {
        const int64_t at = (o * k + r) * inner + j;
        values[at] = x[order[r] * inner];
        if (indices != nullptr) indices[at] = order[r];
      }
    }
  }
}

template void TopK<float>(const float*, int64_t, int64_t, int64_t, int64_t,
                          bool, float*, int64_t*);
template void TopK<double>(const double*, int64_t, int64_t, int64_t, int64_t,
                           bool, double*, int64_t*);
template void TopK<int32_t>(const int32_t*, int64_t, int64_t, int64_t, int64_t,
                            bool, int32_t*, int64_t*);
template void TopK<int64_t>(const int64_t*, int64_t, int64_t, int64_t, int64_t,
                            bool, int64_t*, int64_t*);

void Trilu(const void* src, int64_t batch, int64_t rows, int64_t cols,
           size_t element_bytes, int64_t k, bool upper, void* out) {
  const char* from = static_cast<const char*>(src);
  char* to = static_cast<char*>(out);
  const size_t row_bytes = cols * element_bytes;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      const size_t offset = (b * rows + i) * row_bytes;
      // Columns kept: [first, last), clamped to the row.
      int64_t first = upper ? i + k : 0;
      int64_t last = upper ? cols : i + k + 1;
      first = std::min(std::max<int64_t>(first, 0), cols);
      last = std::min(std::max<int64_t>(last, first), cols);
      std::memset(to + offset, 0, row_bytes);
      std::memcpy(to + offset + first * element_bytes,
                  from + offset + first * element_bytes,
                  (last - first) * element_bytes);
    }
  }
}

namespace {

// Integers sum in their unsigned counterpart, where overflow wraps.
template <typename T, bool = std::is_integral_v<T>>
struct SumTypeOf {
  using type = T;
};
template <typename T>
struct SumTypeOf<T, true> {
  using type = std::make_unsigned_t<T>;
};

}  // namespace

template <typename T>
void CumSum(const T* in, int64_t outer, int64_t dim, int64_t inner,
            bool exclusive, bool reverse, T* out) {
  using Sum = typename SumTypeOf<T>::type;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      Sum sum = 0;
      for (int64_t step = 0; step < dim; ++step) {
        const int64_t i = reverse ? dim - 1 - step : step;
        const int64_t at = (o * dim + i) * inner + j;
        if (exclusive) {
          out[at] = T(sum);
          sum += Sum(in[at]);
        } else {
          sum += Sum(in[at]);
          out[at] = T(sum);
        }
      }
    }
  }
}

template void CumSum<float>(const float*, int64_t, int64_t, int64_t, bool, bool,
                            float*);
template void CumSum<double>(const double*, int64_t, int64_t, int64_t, bool,
                             bool, double*);
template void CumSum<int32_t>(const int32_t*, int64_t, int64_t, int64_t, bool,
                              bool, int32_t*);
template void CumSum<int64_t>(const int64_t*, int64_t, int64_t, int64_t, bool,
                              bool, int64_t*);
template void CumSum<uint32_t>(const uint32_t*, int64_t, int64_t, int64_t, bool,
                               bool, uint32_t*);
template void CumSum<uint64_t>(const uint64_t*, int64_t, int64_t, int64_t, bool,
                               bool, uint64_t*);

}  // namespace coalesce::kernels
