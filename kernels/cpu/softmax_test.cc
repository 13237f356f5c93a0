#include "kernels/cpu/softmax.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

// Reference in double, without max subtraction (inputs are small).
std::vector<float> NaiveSoftmax(const std::vector<float>& in, int64_t outer,
                                int64_t axis, int64_t inner) {
  std::vector<float> out(in.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t a = 0; a < axis; ++a)
        sum += std::exp(in[(o * axis + a) * inner + i]);
      for (int64_t a = 0; a < axis; ++a) {
        const int64_t idx = (o * axis + a) * inner + i;
        out[idx] = static_cast<float>(std::exp(in[idx]) / sum);
      }
    }
  }
  return out;
}

void Check(int64_t outer, int64_t axis, int64_t inner) {
  std::vector<float> in(outer * axis * inner);
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::sin(0.37 * i) * 3;
  std::vector<float> out(in.size());
  Softmax(in.data(), outer, axis, inner, out.data());
  const auto want = NaiveSoftmax(in, outer, axis, inner);
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-6) << i;
}

TEST(SoftmaxTest, LastAxis) { Check(4, 10, 1); }
TEST(SoftmaxTest, MiddleAxis) { Check(3, 5, 7); }
TEST(SoftmaxTest, FirstAxis) { Check(1, 6, 4); }
TEST(SoftmaxTest, LargeParallel) { Check(64, 1000, 1); }

TEST(SoftmaxTest, LargeValuesDoNotOverflow) {
  std::vector<float> in = {1000.0f, 1000.0f, -1000.0f};
  std::vector<float> out(3);
  Softmax(in.data(), 1, 3, 1, out.data());
  EXPECT_NEAR(out[0], 0.5f, 1e-6);
  EXPECT_NEAR(out[1], 0.5f, 1e-6);
  EXPECT_NEAR(out[2], 0.0f, 1e-6);
}

}  // namespace
}  // namespace coalesce::kernels
