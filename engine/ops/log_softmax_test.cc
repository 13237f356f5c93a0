#include <cmath>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

// log(exp(x) / sum exp(x)) over `outer` groups of `axis` elements spaced
// `inner` apart.
std::vector<double> Reference(const std::vector<float>& x, int64_t outer,
                              int64_t axis, int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t a = 0; a < axis; ++a)
        sum += std::exp(x[(o * axis + a) * inner + i]);
      for (int64_t a = 0; a < axis; ++a) {
        const int64_t f = (o * axis + a) * inner + i;
        y[f] = std::log(std::exp(x[f]) / sum);
      }
    }
  return y;
}

// LogSoftmax on a [2,3,4] input; `axis` < -100 means "attribute absent".
void Check(int64_t opset, int64_t axis, int64_t outer, int64_t len,
           int64_t inner) {
  testing::OnnxModelBuilder builder(opset);
  builder.Input("x", {2, 3, 4}).Output("y");
  auto& node = builder.Node("LogSoftmax", {"x"}, {"y"});
  if (axis > -100) testing::SetIntAttr(node, "axis", axis);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto x = testing::RandomFloats(24, 8);
  for (float& v : x) v *= 5;
  auto out = testing::RunModelOnce(*model, {HostTensor{{2, 3, 4}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  const auto want = Reference(x, outer, len, inner);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR((*out)[0].data[i], want[i], 1e-5)
        << "opset " << opset << " axis " << axis;
  }
}

TEST(LogSoftmaxOpTest, Opset13DefaultIsLastAxis) { Check(13, -1000, 6, 4, 1); }
TEST(LogSoftmaxOpTest, Opset13MiddleAxis) { Check(13, 1, 2, 3, 4); }
TEST(LogSoftmaxOpTest, Opset13NegativeAxis) { Check(13, -3, 1, 2, 12); }
TEST(LogSoftmaxOpTest, Opset11DefaultCoercesAtAxis1) {
  Check(11, -1000, 2, 12, 1);
}
TEST(LogSoftmaxOpTest, Opset11Axis2) { Check(11, 2, 6, 4, 1); }
TEST(LogSoftmaxOpTest, Opset11Axis0) { Check(11, 0, 1, 24, 1); }

TEST(LogSoftmaxOpTest, LargeValuesStayFinite) {
  testing::OnnxModelBuilder builder(13);
  builder.Input("x", {3}).Output("y");
  builder.Node("LogSoftmax", {"x"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{{3}, {1000, 0, -1000}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR((*out)[0].data[0], 0.0, 1e-6);
  EXPECT_NEAR((*out)[0].data[1], -1000.0, 1e-3);
  EXPECT_NEAR((*out)[0].data[2], -2000.0, 1e-3);
}

}  // namespace
}  // namespace coalesce
