#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

// Naive reference: for every output element, loop over all input elements
// and keep those whose kept coordinates match.
std::vector<double> Reference(ReduceOp op, const std::vector<float>& in,
                              const std::vector<int64_t>& dims,
                              const std::vector<bool>& reduce) {
  const size_t rank = dims.size();
  int64_t total = 1, out_count = 1;
  for (size_t d = 0; d < rank; ++d) {
    total *= dims[d];
    if (!reduce[d]) out_count *= dims[d];
  }
  // Each op written out on its own, in double, as ONNX defines it.
  std::vector<std::vector<double>> groups(out_count);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rem = flat, o = 0, mul = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t idx = rem % dims[d];
      rem /= dims[d];
      if (!reduce[d]) {
        o += idx * mul;
        mul *= dims[d];
      }
    }
    groups[o].push_back(in[flat]);
  }
  std::vector<double> out(out_count);
  for (int64_t o = 0; o < out_count; ++o) {
    const std::vector<double>& g = groups[o];
    double sum = 0, abs = 0, squares = 0, exps = 0, prod = 1;
    double max = -INFINITY, min = INFINITY;
    for (double x : g) {
      sum += x;
      abs += std::fabs(x);
      squares += x * x;
      exps += std::exp(x);
      prod *= x;
      max = std::max(max, x);
      min = std::min(min, x);
    }
    switch (op) {
      case ReduceOp::kSum:
        out[o] = sum;
        break;
      case ReduceOp::kMean:
        out[o] = sum / g.size();
        break;
      case ReduceOp::kMax:
        out[o] = max;
        break;
      case ReduceOp::kMin:
        out[o] = min;
        break;
      case ReduceOp::kProd:
        out[o] = prod;
        break;
      case ReduceOp::kL1:
        out[o] = abs;
        break;
      case ReduceOp::kL2:
        out[o] = std::sqrt(squares);
        break;
      case ReduceOp::kSumSquare:
        out[o] = squares;
        break;
      case ReduceOp::kLogSum:
        out[o] = std::log(sum);
        break;
      case ReduceOp::kLogSumExp:
        out[o] = std::log(exps);
        break;
    }
  }
  return out;
}

void Check(ReduceOp op, const std::vector<int64_t>& dims,
           const std::vector<bool>& reduce) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<float> in(total);
  // Positive for LogSum; small enough that Prod stays in float's range.
  for (int64_t i = 0; i < total; ++i) in[i] = 1.0f + 0.2f * std::sin(i * 0.7f);
  const auto want = Reference(op, in, dims, reduce);
  std::vector<float> out(want.size());
  Reduce(op, in.data(), dims, reduce, out.data());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i])))
        << static_cast<int>(op) << " " << i;
}

TEST(ReduceTest, AxisCombinations) {
  const std::vector<int64_t> dims = {2, 3, 4, 5};
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin,
        ReduceOp::kProd, ReduceOp::kL1, ReduceOp::kL2, ReduceOp::kSumSquare,
        ReduceOp::kLogSum, ReduceOp::kLogSumExp}) {
    for (int mask = 0; mask < 16; ++mask) {
      std::vector<bool> reduce(4);
      for (int d = 0; d < 4; ++d) reduce[d] = (mask >> d) & 1;
      Check(op, dims, reduce);
    }
    Check(op, {3, 1, 4}, {false, true, true});
    Check(op, {1}, {true});
    Check(op, {}, {});
  }
}

TEST(ReduceTest, EmptyReduction) {
  std::vector<float> out(3, 7.0f);
  Reduce(ReduceOp::kSum, nullptr, {3, 0}, {false, true}, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0}));
  Reduce(ReduceOp::kMax, nullptr, {3, 0}, {false, true}, out.data());
  EXPECT_EQ(out[0], -std::numeric_limits<float>::infinity());
  Reduce(ReduceOp::kMin, nullptr, {3, 0}, {false, true}, out.data());
  EXPECT_EQ(out[0], std::numeric_limits<float>::infinity());
  Reduce(ReduceOp::kProd, nullptr, {3, 0}, {false, true}, out.data());
  EXPECT_EQ(out[0], 1.0f);
  Reduce(ReduceOp::kLogSumExp, nullptr, {3, 0}, {false, true}, out.data());
  EXPECT_EQ(out[0], -std::numeric_limits<float>::infinity());
  Reduce(ReduceOp::kMean, nullptr, {3, 0}, {false, true}, out.data());
  EXPECT_TRUE(std::isnan(out[0]));
}

}  // namespace
}  // namespace coalesce::kernels
