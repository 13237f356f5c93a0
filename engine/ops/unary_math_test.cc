#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;
using Ref = std::function<double(double)>;

// Inputs in [-4, 4), or (0, 4] for functions defined on positives.
std::vector<float> Inputs(bool positive) {
  std::vector<float> x = testing::RandomFloats(12, 7);
  for (float& v : x) v = positive ? std::fabs(v) * 4 + 0.01f : v * 4;
  return x;
}

// Runs `node` (built by `add`) on a [4,3] input and compares with `ref`.
void Check(int64_t opset, const std::string& op, const Ref& ref,
           const std::function<void(onnx::NodeProto&)>& add = nullptr,
           bool positive = false) {
  testing::OnnxModelBuilder builder(opset);
  builder.Input("x", {-1, 3}).Output("y");
  onnx::NodeProto& node = builder.Node(op, {"x"}, {"y"});
  if (add) add(node);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> x = Inputs(positive);
  auto out = testing::RunModelOnce(*model, {HostTensor{{4, 3}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, (Shape{4, 3}));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = ref(x[i]);
    EXPECT_NEAR((*out)[0].data[i], want, 1e-5 * std::max(1.0, std::fabs(want)))
        << op << "(" << x[i] << ") opset " << opset;
  }
}

TEST(UnaryMathOpTest, PlainFunctions) {
  Check(
      13, "Sqrt", [](double x) { return std::sqrt(x); }, nullptr, true);
  Check(
      13, "Log", [](double x) { return std::log(x); }, nullptr, true);
  Check(
      13, "Reciprocal", [](double x) { return 1 / x; }, nullptr, true);
  Check(13, "Exp", [](double x) { return std::exp(x); });
  Check(13, "Neg", [](double x) { return -x; });
  Check(13, "Abs", [](double x) { return std::fabs(x); });
  Check(13, "Erf", [](double x) { return std::erf(x); });
  Check(13, "Softplus", [](double x) { return std::log(1 + std::exp(x)); });
  Check(13, "Softsign", [](double x) { return x / (1 + std::fabs(x)); });
  Check(6, "Exp", [](double x) { return std::exp(x); });  // older opset
}

TEST(UnaryMathOpTest, AttributeDefaults) {
  Check(16, "LeakyRelu", [](double x) { return x >= 0 ? x : 0.01 * x; });
  Check(6, "Elu", [](double x) { return x >= 0 ? x : std::exp(x) - 1; });
  Check(6, "Selu", [](double x) {
    return 1.0507009873554805 *
           (x > 0 ? x : 1.6732632423543772 * (std::exp(x) - 1));
  });
  Check(6, "HardSigmoid",
        [](double x) { return std::fmin(1, std::fmax(0, 0.2 * x + 0.5)); });
}

TEST(UnaryMathOpTest, AttributesSet) {
  Check(
      16, "LeakyRelu", [](double x) { return x >= 0 ? x : 0.2 * x; },
      [](onnx::NodeProto& n) { testing::SetFloatAttr(n, "alpha", 0.2f); });
  Check(
      6, "Elu", [](double x) { return x >= 0 ? x : 0.5 * (std::exp(x) - 1); },
      [](onnx::NodeProto& n) { testing::SetFloatAttr(n, "alpha", 0.5f); });
  Check(
      6, "Selu",
      [](double x) { return 3.0 * (x > 0 ? x : 2.0 * (std::exp(x) - 1)); },
      [](onnx::NodeProto& n) {
        testing::SetFloatAttr(n, "alpha", 2.0f);
        testing::SetFloatAttr(n, "gamma", 3.0f);
      });
  Check(
      6, "HardSigmoid",
      [](double x) { return std::fmin(1, std::fmax(0, 0.3 * x + 0.1)); },
      [](onnx::NodeProto& n) {
        testing::SetFloatAttr(n, "alpha", 0.3f);
        testing::SetFloatAttr(n, "beta", 0.1f);
      });
}

TEST(UnaryMathOpTest, GeluExactAndTanh) {
  const Ref exact = [](double x) {
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  };
  Check(20, "Gelu", exact);
  Check(20, "Gelu", exact, [](onnx::NodeProto& n) {
    testing::SetStringAttr(n, "approximate", "none");
  });
  Check(
      20, "Gelu",
      [](double x) {
        const double k = std::sqrt(2 / M_PI);
        return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
      },
      [](onnx::NodeProto& n) {
        testing::SetStringAttr(n, "approximate", "tanh");
      });
}

TEST(UnaryMathOpTest, GeluRejectsBadApproximateAndOldOpset) {
  for (int64_t opset : {17, 20}) {
    testing::OnnxModelBuilder builder(opset);
    builder.Input("x", {2}).Output("y");
    onnx::NodeProto& node = builder.Node("Gelu", {"x"}, {"y"});
    if (opset == 20) testing::SetStringAttr(node, "approximate", "fast");
    auto model = builder.Load();
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument)
        << opset;
  }
}

TEST(UnaryMathOpTest, ClipAttributesBeforeOpset11) {
  Check(
      6, "Clip", [](double x) { return std::fmin(1.5, std::fmax(-0.5, x)); },
      [](onnx::NodeProto& n) {
        testing::SetFloatAttr(n, "min", -0.5f);
        testing::SetFloatAttr(n, "max", 1.5f);
      });
  Check(
      6, "Clip", [](double x) { return std::fmax(0, x); },
      [](onnx::NodeProto& n) { testing::SetFloatAttr(n, "min", 0.0f); });
  Check(6, "Clip", [](double x) { return x; });
}

// Opset 11+: min and max are optional inputs; "" leaves one out.
void CheckClipInputs(int64_t opset, const std::string& lo_name,
                     const std::string& hi_name, double lo, double hi) {
  testing::OnnxModelBuilder builder(opset);
  builder.Input("x", {4, 3}).Output("y");
  if (!lo_name.empty()) builder.FloatInitializer(lo_name, {}, {float(lo)});
  std::vector<HostTensor> inputs = {HostTensor{{4, 3}, Inputs(false)}};
  if (!hi_name.empty()) {
    builder.Input(hi_name, {});
    inputs.push_back(HostTensor{{}, {float(hi)}});
  }
  std::vector<std::string> node_inputs = {"x", lo_name};
  if (!hi_name.empty()) node_inputs.push_back(hi_name);
  builder.Node("Clip", node_inputs, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < inputs[0].data.size(); ++i) {
    const double x = inputs[0].data[i];
    EXPECT_FLOAT_EQ((*out)[0].data[i], std::fmin(hi, std::fmax(lo, x)));
  }
}

TEST(UnaryMathOpTest, ClipInputsSinceOpset11) {
  CheckClipInputs(11, "lo", "hi", -1.0, 2.0);
  CheckClipInputs(13, "lo", "", -1.0, INFINITY);
  CheckClipInputs(13, "", "hi", -INFINITY, 0.5);
  CheckClipInputs(13, "", "", -INFINITY, INFINITY);
}

TEST(UnaryMathOpTest, ClipRejectsNonScalarBound) {
  testing::OnnxModelBuilder builder(13);
  builder.Input("x", {4}).Output("y");
  builder.FloatInitializer("lo", {2}, {0, 1});
  builder.Node("Clip", {"x", "lo"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{{4}, {1, 2, 3, 4}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
