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

double Identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return -std::numeric_limits<double>::infinity();
    case ReduceOp::kMin:
      return std::numeric_limits<double>::infinity();
    case ReduceOp::kProd:
      return 1.0;
    default:
      return 0.0;
  }
}

// What each element contributes before combining.
double Mapped(ReduceOp op, float x) {
  switch (op) {
    case ReduceOp::kL1:
      return std::fabs(x);
    case ReduceOp::kL2:
    case ReduceOp::kSumSquare:
      return double{x} * x;
    case ReduceOp::kLogSumExp:
      return std::exp(double{x});
    default:
      return x;
  }
}

double Combine(ReduceOp op, double acc, double v) {
  switch (op) {
    case ReduceOp::kMax:
      return (std::isnan(v) || v > acc) ? v : acc;
    case ReduceOp::kMin:
      return (std::isnan(v) || v < acc) ? v : acc;
    case ReduceOp::kProd:
      return acc * v;
    default:
      return acc + v;
  }
}

// The result from the combined value of `count` elements.
float Finish(ReduceOp op, double acc, int64_t count) {
  switch (op) {
    case ReduceOp::kMean:
      return static_cast<float>(acc / static_cast<double>(count));
    case ReduceOp::kL2:
      return static_cast<float>(std::sqrt(acc));
    case ReduceOp::kLogSum:
    case ReduceOp::kLogSumExp:
      return static_cast<float>(std::log(acc));
    default:
      return static_cast<float>(acc);
  }
}

// [rows, cols] reduced over cols.
void ReduceRows(ReduceOp op, const float* in, int64_t rows, int64_t cols,
                float* out) {
#pragma omp parallel for if (rows * cols >= kParallelElements && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
    double acc = Identity(op);
    for (int64_t c = 0; c < cols; ++c)
      acc = Combine(op, acc, Mapped(op, row[c]));
    out[r] = Finish(op, acc, cols);
  }
}

// The general case: walk the input once, accumulating into the output
// element selected by the kept coordinates.
void ReduceGeneral(ReduceOp op, const float* in, const Collapsed& c, float* out,
                   int64_t out_count, int64_t reduced_count) {
  const size_t rank = c.dims.size();
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    if (c.reduce[i]) continue;
    out_strides[i] = stride;
    stride *= c.dims[i];
  }
  std::vector<double> acc(out_count, Identity(op));
  int64_t total = 1;
  for (int64_t d : c.dims) total *= d;
  std::vector<int64_t> idx(rank, 0);
  int64_t out_off = 0;
  for (int64_t i = 0; i < total; ++i) {
    acc[out_off] = Combine(op, acc[out_off], Mapped(op, in[i]));
    for (size_t d = rank; d-- > 0;) {  // advance the odometer
      out_off += out_strides[d];
      if (++idx[d] < c.dims[d]) break;
      out_off -= out_strides[d] * c.dims[d];
      idx[d] = 0;
    }
  }
  for (int64_t i = 0; i < out_count; ++i)
    out[i] = Finish(op, acc[i], reduced_count);
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
    std::fill(out, out + out_count, Finish(op, Identity(op), 0));
  } else if (c.dims.empty() || (c.dims.size() == 1 && !c.reduce[0])) {
    // Nothing to reduce: each output is its one element.
    for (int64_t i = 0; i < out_count; ++i)
      out[i] = Finish(op, Combine(op, Identity(op), Mapped(op, in[i])), 1);
  } else if (c.dims.size() == 1) {
    ReduceRows(op, in, 1, c.dims[0], out);
  } else if (c.dims.size() == 2 && !c.reduce[0]) {
    ReduceRows(op, in, c.dims[0], c.dims[1], out);
  } else {
    ReduceGeneral(op, in, c, out, out_count, reduced_count);
  }
}

}  // namespace coalesce::kernels
