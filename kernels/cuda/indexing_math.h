// The per-element math of the CUDA indexing kernels (indexing.cu): GatherND
// and GatherElements source offsets, and the per-line CumSum and ArgMax of
// a [outer, n, inner] view. Semantics match the CPU engine's
// (kernels/cpu/indexing.h, argmax.h), except that an index out of range
// gives a zero element instead of failing the run (a kernel cannot fail
// one batch). Host and device; unit-tested on the host (cuda_math_test.cc).
#ifndef COALESCE_KERNELS_CUDA_INDEXING_MATH_H_
#define COALESCE_KERNELS_CUDA_INDEXING_MATH_H_

#include <stdint.h>

#include "kernels/cuda/host_device.h"

namespace coalesce::kernels::cuda {

inline constexpr int kMaxIndexingRank = 8;

// GatherND with batch_dims: data viewed as [batches, indexed dims..., slice]
// and int64 indices as [batches * rows_per_batch, k]; output row r is the
// slice the r-th index tuple selects in batch r / rows_per_batch.
struct GatherNdIndexer {
  int64_t rows_per_batch = 1;
  int64_t batch_stride = 0;  // data elements per batch
  int64_t slice = 1;         // elements per selected slice
  int k = 0;                 // index tuple length
  int64_t dims[kMaxIndexingRank] = {};
  int64_t strides[kMaxIndexingRank] = {};  // in data elements
};

// The data offset output element `i` copies, or -1 when its tuple has an
// index out of range (negative indices count from the end).
COALESCE_HD int64_t GatherNdSource(const GatherNdIndexer& ix,
                                   const int64_t* indices, int64_t i) {
  const int64_t row = i / ix.slice;
  int64_t offset = (row / ix.rows_per_batch) * ix.batch_stride;
  for (int j = 0; j < ix.k; ++j) {
    int64_t index = indices[row * ix.k + j];
    if (index < 0) index += ix.dims[j];
    if (index < 0 || index >= ix.dims[j]) return -1;
    offset += index * ix.strides[j];
  }
  return offset + i % ix.slice;
}

// GatherElements along `axis`: the output (and the indices) have out_dims;
// data has data_strides and axis_dim elements along the axis.
struct GatherElementsIndexer {
  int rank = 0;
  int axis = 0;
  int64_t axis_dim = 0;
  int64_t out_dims[kMaxIndexingRank] = {};
  int64_t data_strides[kMaxIndexingRank] = {};
};

// The data offset of output element `i` whose index is `index`, or -1 when
// the index is out of range.
COALESCE_HD int64_t GatherElementsSource(const GatherElementsIndexer& ix,
                                         int64_t index, int64_t i) {
  if (index < 0) index += ix.axis_dim;
  if (index < 0 || index >= ix.axis_dim) return -1;
  int64_t offset = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t coord = i % ix.out_dims[d];
    i /= ix.out_dims[d];
    offset += (d == ix.axis ? index : coord) * ix.data_strides[d];
  }
  return offset;
}

// The wider type CumSum accumulates in: double for float (as the CPU
// engine), unsigned for integers (wrapping).
template <typename T>
struct CumSumAccumulator {
  using type = T;
};
template <>
struct CumSumAccumulator<float> {
  using type = double;
};
template <>
struct CumSumAccumulator<int64_t> {
  using type = uint64_t;
};
template <>
struct CumSumAccumulator<int32_t> {
  using type = uint32_t;
};

// Running sums along line `line` (of outer * inner) of [outer, n, inner]:
// exclusive leaves out the element itself, reverse sums from the end.
template <typename T>
COALESCE_HD void CumSumLine(const T* x, T* y, int64_t line, int64_t n,
                            int64_t inner, bool exclusive, bool reverse) {
  using Sum = typename CumSumAccumulator<T>::type;
  const int64_t base = (line / inner) * n * inner + line % inner;
  Sum sum = 0;
  for (int64_t step = 0; step < n; ++step) {
    const int64_t at = base + (reverse ? n - 1 - step : step) * inner;
    const Sum value = static_cast<Sum>(x[at]);
    if (!exclusive) sum += value;
    y[at] = static_cast<T>(sum);
    if (exclusive) sum += value;
  }
}

// The index of the largest element of line `line` of [outer, n, inner];
// ties go to the first index, or the last with select_last (NaN never
// compares larger, as on the CPU).
template <typename T>
COALESCE_HD int64_t ArgMaxLine(const T* x, int64_t line, int64_t n,
                               int64_t inner, bool select_last) {
  const int64_t base = (line / inner) * n * inner + line % inner;
  int64_t best = 0;
  T best_value = x[base];
  for (int64_t k = 1; k < n; ++k) {
    const T v = x[base + k * inner];
    if (v > best_value || (select_last && v == best_value)) {
      best = k;
      best_value = v;
    }
  }
  return best;
}

}  // namespace coalesce::kernels::cuda

#endif  // COALESCE_KERNELS_CUDA_INDEXING_MATH_H_
