#include <cmath>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

int64_t Count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Element of `v` (shape s) at output coordinate idx under NumPy broadcasting.
float At(const std::vector<float>& v, const Shape& s, const Shape& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d)
    f = f * s[d] + (s[d] == 1 ? 0 : idx[idx.size() - s.size() + d]);
  return v[f];
}

Shape Unflatten(int64_t flat, const Shape& shape) {
  Shape idx(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

// Runs `op` on a and b (b an initializer), compares with `ref` elementwise.
void Check(int64_t opset, const std::string& op, const Shape& a_shape,
           std::vector<float> a, const Shape& b_shape,
           const std::vector<float>& b, const Shape& out_shape,
           double (*ref)(double, double)) {
  testing::OnnxModelBuilder builder(opset);
  builder.Input("a", a_shape).Output("y");
  builder.FloatInitializer("b", b_shape, b);
  builder.Node(op, {"a", "b"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{a_shape, a}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, out_shape);
  for (int64_t flat = 0; flat < Count(out_shape); ++flat) {
    const Shape idx = Unflatten(flat, out_shape);
    const double want = ref(At(a, a_shape, idx), At(b, b_shape, idx));
    ASSERT_NEAR((*out)[0].data[flat], want,
                1e-5 * std::max(1.0, std::fabs(want)))
        << op << " at " << flat;
  }
}

double PowRef(double x, double y) { return std::pow(x, y); }
double PReluRef(double x, double s) { return x < 0 ? s * x : x; }

std::vector<float> Positive(size_t n, uint32_t seed) {
  auto v = testing::RandomFloats(n, seed);
  for (float& x : v) x = std::fabs(x) * 3 + 0.1f;
  return v;
}

TEST(PowOpTest, BroadcastVariants) {
  for (int64_t opset : {7, 13, 15}) {
    Check(opset, "Pow", {2, 3}, Positive(6, 1), {2, 3},
          testing::RandomFloats(6, 2), {2, 3}, PowRef);
    Check(opset, "Pow", {2, 3}, Positive(6, 1), {}, {2.0f}, {2, 3}, PowRef);
    Check(opset, "Pow", {3, 1}, Positive(3, 3), {1, 4},
          testing::RandomFloats(4, 4), {3, 4}, PowRef);
    Check(opset, "Pow", {4}, Positive(4, 5), {2, 3, 1},
          testing::RandomFloats(6, 6), {2, 3, 4}, PowRef);
  }
}

TEST(PowOpTest, NegativeBaseIntegerExponent) {
  Check(13, "Pow", {4}, {-2, -1.5, 0, 3}, {}, {3.0f}, {4}, PowRef);
}

TEST(PReluOpTest, SlopeBroadcastsToX) {
  const auto x = testing::RandomFloats(24, 9);
  for (int64_t opset : {7, 9, 16}) {
    // Per-channel slope [C,1,1] on NCHW, scalar slope, full slope.
    Check(opset, "PRelu", {1, 2, 3, 4}, x, {2, 1, 1}, {0.1f, 0.3f},
          {1, 2, 3, 4}, PReluRef);
    Check(opset, "PRelu", {2, 3, 4}, x, {1}, {0.25f}, {2, 3, 4}, PReluRef);
    Check(opset, "PRelu", {2, 3, 4}, x, {4}, {0.1f, 0.2f, 0.3f, 0.4f},
          {2, 3, 4}, PReluRef);
    Check(opset, "PRelu", {2, 3, 4}, x, {2, 3, 4}, testing::RandomFloats(24, 3),
          {2, 3, 4}, PReluRef);
  }
}

TEST(PReluOpTest, SlopeThatWouldGrowXIsRejected) {
  testing::OnnxModelBuilder builder(16);
  builder.Input("x", {3}).Output("y");
  builder.FloatInitializer("s", {2, 3}, std::vector<float>(6, 0.1f));
  builder.Node("PRelu", {"x", "s"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {HostTensor{{3}, {1, -1, 2}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PowOpTest, IncompatibleShapesRejected) {
  testing::OnnxModelBuilder builder(13);
  builder.Input("a", {2, 3}).Output("y");
  builder.FloatInitializer("b", {4}, {1, 2, 3, 4});
  builder.Node("Pow", {"a", "b"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model,
                                   {HostTensor{{2, 3}, std::vector<float>(6)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
