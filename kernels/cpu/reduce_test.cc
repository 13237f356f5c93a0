#include "kernels/cpu/reduce.h"

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
  std::vector<double> acc(out_count, op == ReduceOp::kMax ? -INFINITY : 0.0);
  std::vector<int64_t> cnt(out_count, 0);
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
    acc[o] = op == ReduceOp::kMax ? std::max(acc[o], double(in[flat]))
                                  : acc[o] + in[flat];
    ++cnt[o];
  }
  if (op == ReduceOp::kMean)
    for (int64_t o = 0; o < out_count; ++o) acc[o] /= cnt[o];
  return acc;
}

void Check(ReduceOp op, const std::vector<int64_t>& dims,
           const std::vector<bool>& reduce) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<float> in(total);
  for (int64_t i = 0; i < total; ++i) in[i] = std::sin(i * 0.7f) * 3;
  const auto want = Reference(op, in, dims, reduce);
  std::vector<float> out(want.size());
  Reduce(op, in.data(), dims, reduce, out.data());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-4) << static_cast<int>(op) << " " << i;
}

TEST(ReduceTest, AxisCombinations) {
  const std::vector<int64_t> dims = {2, 3, 4, 5};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax}) {
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
}

}  // namespace
}  // namespace coalesce::kernels
