#include <cmath>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

void Check(const std::string& op, double (*ref)(double)) {
  testing::OnnxModelBuilder builder;
  builder.Input("x", {-1, 3}).Output("y");
  builder.Node(op, {"x"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> x = testing::RandomFloats(12, 3);
  for (float& v : x) v *= 8;
  auto out = testing::RunModelOnce(*model, {HostTensor{{4, 3}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{4, 3}));
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR((*out)[0].data[i], ref(x[i]), 1e-6) << op;
}

TEST(ActivationOpTest, Relu) {
  Check("Relu", [](double v) { return v > 0 ? v : 0.0; });
}
TEST(ActivationOpTest, Sigmoid) {
  Check("Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); });
}
TEST(ActivationOpTest, Tanh) {
  Check("Tanh",
        [](double v) { return (std::exp(2 * v) - 1) / (std::exp(2 * v) + 1); });
}

}  // namespace
}  // namespace coalesce
