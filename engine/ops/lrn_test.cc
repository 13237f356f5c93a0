#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

// The ONNX formula: square_sum over channels [c - floor((size-1)/2),
// c + ceil((size-1)/2)], y = x / (bias + alpha / size * square_sum)^beta.
std::vector<float> NaiveLrn(const std::vector<float>& x, const Shape& shape,
                            int64_t size, double alpha, double beta,
                            double bias) {
  const int64_t n = shape[0], c = shape[1];
  const int64_t inner = static_cast<int64_t>(x.size()) / (n * c);
  std::vector<float> y(x.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        const int64_t lo = ch - (size - 1) / 2;
        const int64_t hi =
            ch + static_cast<int64_t>(std::ceil((size - 1) / 2.0));
        for (int64_t k = std::max<int64_t>(0, lo); k <= std::min(c - 1, hi);
             ++k) {
          const double v = x[(b * c + k) * inner + i];
          sum += v * v;
        }
        const int64_t at = (b * c + ch) * inner + i;
        y[at] = static_cast<float>(x[at] /
                                   std::pow(bias + alpha / size * sum, beta));
      }
  return y;
}

void CheckLrn(const Shape& shape, int64_t size, float alpha, float beta,
              float bias, bool defaults = false, int64_t opset = 13) {
  testing::OnnxModelBuilder b(opset);
  b.Input("x", shape).Output("y");
  auto& node = b.Node("LRN", {"x"}, {"y"});
  testing::SetIntAttr(node, "size", size);
  if (!defaults) {
    testing::SetFloatAttr(node, "alpha", alpha);
    testing::SetFloatAttr(node, "beta", beta);
    testing::SetFloatAttr(node, "bias", bias);
  }
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> x = testing::RandomFloats(count, /*seed=*/11);
  for (float& v : x) v *= 4.0f;
  auto out = testing::RunModelOnce(*model, {HostTensor{shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, shape);
  const auto want = NaiveLrn(x, shape, size, alpha, beta, bias);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR((*out)[0].data[i], want[i], 1e-5 * (1 + std::abs(want[i])))
        << "size " << size << " at " << i;
}

TEST(LrnOpTest, DefaultsMatchFormula) {
  CheckLrn({2, 5, 3, 4}, /*size=*/3, 1e-4f, 0.75f, 1.0f, /*defaults=*/true);
}

TEST(LrnOpTest, OddAndEvenSizes) {
  CheckLrn({1, 7, 4, 3}, /*size=*/5, 0.002f, 0.75f, 2.0f);
  CheckLrn({1, 6, 2, 5}, /*size=*/4, 0.5f, 0.6f, 1.5f);
  CheckLrn({2, 3, 5}, /*size=*/1, 0.3f, 1.0f, 0.5f, false, /*opset=*/1);
}

TEST(LrnOpTest, WindowWiderThanChannels) {
  CheckLrn({1, 2, 3, 3}, /*size=*/7, 0.1f, 0.5f, 1.0f);
}

TEST(LrnOpTest, LargeInputRunsInParallel) {
  CheckLrn({2, 32, 24, 24}, /*size=*/5, 1e-3f, 0.75f, 1.0f);
}

TEST(LrnOpTest, MissingOrBadSizeIsRejected) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {1, 2, 2, 2}).Output("y");
  b.Node("LRN", {"x"}, {"y"});
  EXPECT_EQ(b.Load().status().code(), absl::StatusCode::kInvalidArgument);

  testing::OnnxModelBuilder zero(/*opset=*/13);
  zero.Input("x", {1, 2, 2, 2}).Output("y");
  testing::SetIntAttr(zero.Node("LRN", {"x"}, {"y"}), "size", 0);
  EXPECT_EQ(zero.Load().status().code(), absl::StatusCode::kInvalidArgument);

  // A size the kernel's window arithmetic cannot hold.
  testing::OnnxModelBuilder huge(/*opset=*/13);
  huge.Input("x", {1, 2, 2, 2}).Output("y");
  testing::SetIntAttr(huge.Node("LRN", {"x"}, {"y"}), "size", int64_t{1} << 62);
  EXPECT_EQ(huge.Load().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LrnOpTest, RankBelowTwoIsRejectedWhenPlanning) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {4}).Output("y");
  testing::SetIntAttr(b.Node("LRN", {"x"}, {"y"}), "size", 3);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{{4}, {1, 2, 3, 4}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
