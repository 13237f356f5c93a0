#include "kernels/cpu/activation.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

std::vector<float> Inputs() {
  std::vector<float> v;
  for (int i = -400; i <= 400; ++i) v.push_back(i * 0.25f);
  v.push_back(-1000.0f);
  v.push_back(1000.0f);
  return v;
}

TEST(ActivationTest, Relu) {
  const auto in = Inputs();
  std::vector<float> out(in.size());
  Relu(in.data(), in.size(), out.data());
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], std::fmax(in[i], 0.0f));
}

TEST(ActivationTest, SigmoidIsStableAndAccurate) {
  const auto in = Inputs();
  std::vector<float> out(in.size());
  Sigmoid(in.data(), in.size(), out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    const double want = 1.0 / (1.0 + std::exp(-static_cast<double>(in[i])));
    EXPECT_NEAR(out[i], want, 1e-6) << in[i];
    EXPECT_FALSE(std::isnan(out[i]));
  }
}

TEST(ActivationTest, TanhInPlace) {
  auto data = Inputs();
  const auto in = data;
  Tanh(data.data(), data.size(), data.data());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_NEAR(data[i], std::tanh(static_cast<double>(in[i])), 1e-6);
  }
}

TEST(ActivationTest, LargeArrayUsesParallelPathCorrectly) {
  std::vector<float> in(100000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = (i % 7) - 3.0f;
  std::vector<float> out(in.size());
  Relu(in.data(), in.size(), out.data());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(out[i], in[i] > 0 ? in[i] : 0);
}

}  // namespace
}  // namespace coalesce::kernels
