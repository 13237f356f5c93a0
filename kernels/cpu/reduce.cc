#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

// The input with adjacent dimensions of the same kind merged and size-1
// dimensions dropped, so the common cases become [rows, cols] reductions.
struct Collapsed {
  std::vector<int64_t> dims;
  std::vector<bool> reduce;
};

Collapsed Collapse(const std::vector<int64_t>& dims,
                   const std::vector<bool>& reduce) {
  Collapsed c;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!c.dims.empty() && c.reduce.back() == reduce[i]) {
      c.dims.back() *= dims[i];
    } else {
      c.dims.push_back(dims[i]);
      c.reduce.push_back(reduce[i]);
    }
  }
  return c;
}

float Identity(ReduceOp op) {
  return op == ReduceOp::kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
}

float Combine(ReduceOp op, float acc, float x) {
  if (op != ReduceOp::kMax) return acc + x;
  return (std::isnan(x) || x > acc) ? x : acc;
}

// [rows, cols] reduced over cols: each row is summed in double.
void ReduceRows(ReduceOp op, const float* in, int64_t rows, int64_t cols,
                float* out) {
#pragma omp parallel for if (rows * cols >= kParallelElements && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
    if (op == ReduceOp::kMax) {
      float acc = Identity(op);
      for (int64_t c = 0; c < cols; ++c) acc = Combine(op, acc, row[c]);
      out[r] = acc;
    } else {
      double acc = 0.0;
      for (int64_t c = 0; c < cols; ++c) acc += row[c];
      out[r] = static_cast<float>(acc);
    }
  }
}

// The general case: walk the input once, accumulating into the output
// element selected by the kept coordinates.
void ReduceGeneral(ReduceOp op, const float* in, const Collapsed& c, float* out,
                   int64_t out_count) {
  const size_t rank = c.dims.size();
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    if (c.reduce[i]) continue;
    out_strides[i] = stride;
    stride *= c.dims[i];
  }
  std::fill(out, out + out_count, Identity(op));
  int64_t total = 1;
  for (int64_t d : c.dims) total *= d;
  std::vector<int64_t> idx(rank, 0);
  int64_t out_off = 0;
  for (int64_t i = 0; i < total; ++i) {
    out[out_off] = Combine(op, out[out_off], in[i]);
    for (size_t d = rank; d-- > 0;) {  // advance the odometer
      out_off += out_strides[d];
      if (++idx[d] < c.dims[d]) break;
      out_off -= out_strides[d] * c.dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

void Reduce(ReduceOp op, const float* in, const std::vector<int64_t>& dims,
            const std::vector<bool>& reduce, float* out) {
  int64_t out_count = 1, reduced_count = 1;
  for (size_t i = 0; i < dims.size(); ++i)
    (reduce[i] ? reduced_count : out_count) *= dims[i];
  if (out_count == 0) return;
  const Collapsed c = Collapse(dims, reduce);
  if (reduced_count == 0) {
    const float value = op == ReduceOp::kMean
                            ? std::numeric_limits<float>::quiet_NaN()
                            : Identity(op);
    std::fill(out, out + out_count, value);
    return;
  }
  if (c.dims.empty() || (c.dims.size() == 1 && !c.reduce[0])) {
    std::copy(in, in + out_count, out);  // nothing to reduce
  } else if (c.dims.size() == 1) {
    ReduceRows(op, in, 1, c.dims[0], out);
  } else if (c.dims.size() == 2 && !c.reduce[0]) {
    ReduceRows(op, in, c.dims[0], c.dims[1], out);
  } else {
    ReduceGeneral(op, in, c, out, out_count);
  }
  if (op == ReduceOp::kMean) {
    const float scale = 1.0f / static_cast<float>(reduced_count);
    for (int64_t i = 0; i < out_count; ++i) out[i] *= scale;
  }
}

}  // namespace coalesce::kernels
