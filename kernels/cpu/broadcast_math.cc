#include "kernels/cpu/broadcast_math.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/elementwise.h"

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 16;

struct AddFn {
  float operator()(float x, float y) const { return x + y; }
};
struct MaxFn {
  float operator()(float x, float y) const {
    if (std::isnan(x) || std::isnan(y))
      return std::numeric_limits<float>::quiet_NaN();
    return x < y ? y : x;
  }
};
struct MinFn {
  float operator()(float x, float y) const {
    if (std::isnan(x) || std::isnan(y))
      return std::numeric_limits<float>::quiet_NaN();
    return y < x ? y : x;
  }
};
struct PowFn {
  float operator()(float x, float y) const { return std::pow(x, y); }
};
struct PReluFn {
  float operator()(float x, float y) const { return x < 0.0f ? x * y : x; }
};
// Ignores the second operand: BroadcastTo.
struct FirstFn {
  float operator()(float x, float) const { return x; }
};

// Strides of `dims` right-aligned to `rank`, 0 for broadcast dimensions.
std::vector<int64_t> AlignedStrides(const std::vector<int64_t>& dims,
                                    size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[rank - dims.size() + i] = dims[i] == 1 ? 0 : stride;
    stride *= dims[i];
  }
  return strides;
}

// Rows of the output's last dimension; each operand steps through a row with
// stride 0 or 1 and starts at an offset computed from the row's coordinates.
template <typename Fn>
void Apply(const float* a, const std::vector<int64_t>& a_dims, const float* b,
           const std::vector<int64_t>& b_dims,
           const std::vector<int64_t>& out_dims, float* out) {
  const size_t rank = out_dims.size();
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    out[0] = Fn()(a[0], b[0]);
    return;
  }
  const std::vector<int64_t> sa = AlignedStrides(a_dims, rank);
  const std::vector<int64_t> sb = AlignedStrides(b_dims, rank);
  const int64_t inner = out_dims[rank - 1];
  const int64_t rows = total / inner;
  const int64_t ia = sa[rank - 1], ib = sb[rank - 1];
#pragma omp parallel for if (total >= kParallelElements && rows > 1)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t a_off = 0, b_off = 0, rem = row;
    for (size_t d = rank - 1; d-- > 0;) {
      const int64_t idx = rem % out_dims[d];
      rem /= out_dims[d];
      a_off += idx * sa[d];
      b_off += idx * sb[d];
    }
    const float* pa = a + a_off;
    const float* pb = b + b_off;
    float* po = out + row * inner;
    Fn fn;
    for (int64_t i = 0; i < inner; ++i) po[i] = fn(pa[i * ia], pb[i * ib]);
  }
}

}  // namespace

void BroadcastMath(MathBinaryOp op, const float* a,
                   const std::vector<int64_t>& a_dims, const float* b,
                   const std::vector<int64_t>& b_dims, float* out) {
  const std::vector<int64_t> out_dims = *BroadcastShapes(a_dims, b_dims);
  switch (op) {
    case MathBinaryOp::kAdd:
      return Apply<AddFn>(a, a_dims, b, b_dims, out_dims, out);
    case MathBinaryOp::kMax:
      return Apply<MaxFn>(a, a_dims, b, b_dims, out_dims, out);
    case MathBinaryOp::kMin:
      return Apply<MinFn>(a, a_dims, b, b_dims, out_dims, out);
    case MathBinaryOp::kPow:
      return Apply<PowFn>(a, a_dims, b, b_dims, out_dims, out);
    case MathBinaryOp::kPRelu:
      return Apply<PReluFn>(a, a_dims, b, b_dims, out_dims, out);
  }
}

void BroadcastTo(const float* in, const std::vector<int64_t>& in_dims,
                 const std::vector<int64_t>& out_dims, float* out) {
  Apply<FirstFn>(in, in_dims, in, in_dims, out_dims, out);
}

void Scale(float* data, int64_t n, float scale) {
#pragma omp parallel for simd if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) data[i] *= scale;
}

}  // namespace coalesce::kernels
