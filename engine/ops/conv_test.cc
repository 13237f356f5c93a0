#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "engine/op_registry.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

// A convolution case: spatial dims 1 to 3, explicit pads (begin..., end...).
struct Case {
  int64_t n = 1, c = 1, m = 1, group = 1;
  std::vector<int64_t> in, kernel, strides, dilations, pads;
  bool bias = true;
};

// Direct convolution from the ONNX definition, in double, with spatial dims
// padded to three.
std::vector<float> Reference(const Case& t, const std::vector<float>& x,
                             const std::vector<float>& w,
                             const std::vector<float>& b,
                             std::vector<int64_t>* out_dims) {
  const size_t r = t.in.size();
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1},
      pb{0, 0, 0}, out{1, 1, 1};
  for (size_t i = 0; i < r; ++i) {
    in[i] = t.in[i];
    k[i] = t.kernel[i];
    s[i] = t.strides[i];
    d[i] = t.dilations[i];
    pb[i] = t.pads[i];
    out[i] =
        (t.in[i] + t.pads[i] + t.pads[r + i] - (k[i] - 1) * d[i] - 1) / s[i] +
        1;
    out_dims->push_back(out[i]);
  }
  const int64_t cg = t.c / t.group, mg = t.m / t.group;
  std::vector<float> y;
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t m = 0; m < t.m; ++m)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = t.bias ? b[m] : 0.0;
            const int64_t g = m / mg;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                    const int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                    const int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                        i2 < 0 || i2 >= in[2])
                      continue;
                    const int64_t xi =
                        (((n * t.c + g * cg + c) * in[0] + i0) * in[1] + i1) *
                            in[2] +
                        i2;
                    const int64_t wi =
                        (((m * cg + c) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    acc += static_cast<double>(x[xi]) * w[wi];
                  }
            y.push_back(static_cast<float>(acc));
          }
  return y;
}

Shape Concat(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// [N, C, S...] (S... the spatial dims, `spatial_size` elements) to
// [N, S..., C].
std::vector<float> ToChannelsLast(const std::vector<float>& v, int64_t n,
                                  int64_t c, int64_t spatial_size) {
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < spatial_size; ++p)
        out[(i * spatial_size + p) * c + ch] =
            v[(i * c + ch) * spatial_size + p];
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::abs(want[i]))
        << what << " at " << i;
}

// How Check builds the node: Conv, or FusedConv when it has an activation or
// channels-last activations.
struct Variant {
  bool runtime_weights = false;  // W a graph input instead of an initializer
  std::string activation = "";   // empty: none
  bool channels_last = false;    // X and Y as [N, spatial..., C]
};

// Builds the node with constant weights (or weights as a graph input) and
// checks it against Reference, which always works on NCHW; for channels-last
// the test transposes X before the run and Reference's result after it.
void Check(const Case& t, const Variant& v = {}) {
  const Shape x_shape = Concat({t.n, t.c}, t.in);
  const Shape w_shape = Concat({t.m, t.c / t.group}, t.kernel);
  const int64_t in_size = DimProduct(t.in, 0, t.in.size());
  const auto x =
      testing::RandomFloats(DimProduct(x_shape, 0, x_shape.size()), 1);
  const auto w =
      testing::RandomFloats(DimProduct(w_shape, 0, w_shape.size()), 2);
  const auto b = testing::RandomFloats(t.m, 3);
  const Shape fed_shape =
      v.channels_last ? Concat(Concat({t.n}, t.in), {t.c}) : x_shape;
  testing::OnnxModelBuilder builder(17);
  builder.Input("x", fed_shape).Output("y");
  std::vector<HostTensor> inputs = {
      {fed_shape, v.channels_last ? ToChannelsLast(x, t.n, t.c, in_size) : x}};
  if (v.runtime_weights) {
    builder.Input("w", w_shape);
    inputs.push_back({w_shape, w});
  } else {
    builder.FloatInitializer("w", w_shape, w);
  }
  std::vector<std::string> node_inputs = {"x", "w"};
  if (t.bias) {
    builder.FloatInitializer("b", {t.m}, b);
    node_inputs.push_back("b");
  }
  const bool fused = !v.activation.empty() || v.channels_last;
  auto& node = builder.Node(fused ? "FusedConv" : "Conv", node_inputs, {"y"});
  if (fused) node.set_domain(OpRegistry::kInternalDomain);
  if (!v.activation.empty())
    testing::SetStringAttr(node, "activation", v.activation);
  if (v.channels_last) testing::SetIntAttr(node, "channels_last", 1);
  testing::SetIntAttr(node, "group", t.group);
  testing::SetIntsAttr(node, "strides", t.strides);
  testing::SetIntsAttr(node, "dilations", t.dilations);
  testing::SetIntsAttr(node, "pads", t.pads);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<int64_t> out_spatial;
  std::vector<float> want = Reference(t, x, w, b, &out_spatial);
  if (v.activation == "Relu")
    for (float& y : want) y = std::max(y, 0.0f);
  if (v.channels_last) {
    want = ToChannelsLast(want, t.n, t.m,
                          DimProduct(out_spatial, 0, out_spatial.size()));
    EXPECT_EQ((*out)[0].shape, Concat(Concat({t.n}, out_spatial), {t.m}));
  } else {
    EXPECT_EQ((*out)[0].shape, Concat({t.n, t.m}, out_spatial));
  }
  ExpectNear((*out)[0].data, want, v.activation);
}

TEST(ConvOpTest, PlainTwoDimensional) {
  Check({.n = 2,
         .c = 3,
         .m = 4,
         .in = {7, 6},
         .kernel = {3, 3},
         .strides = {1, 1},
         .dilations = {1, 1},
         .pads = {0, 0, 0, 0}});
}

TEST(ConvOpTest, StridesPadsAndDilations) {
  Check({.n = 1,
         .c = 5,
         .m = 6,
         .in = {11, 9},
         .kernel = {3, 2},
         .strides = {2, 3},
         .dilations = {2, 1},
         .pads = {1, 0, 2, 1}});
}

TEST(ConvOpTest, GroupedAndDepthwise) {
  Check({.n = 2,
         .c = 6,
         .m = 4,
         .group = 2,
         .in = {8, 8},
         .kernel = {3, 3},
         .strides = {1, 1},
         .dilations = {1, 1},
         .pads = {1, 1, 1, 1}});
  Check({.n = 1,
         .c = 8,
         .m = 8,
         .group = 8,
         .in = {9, 7},
         .kernel = {3, 3},
         .strides = {2, 2},
         .dilations = {1, 1},
         .pads = {1, 1, 1, 1}});
}

// ShuffleNet's first grouped 1x1 convolution: 24 to 112 channels in 4
// groups, which oneDNN runs as im2col + GEMM; the kernel runs it as a dense
// convolution with zeros between the groups (kernels/cpu/conv.cc). Both
// layouts, with the residual-free bias and Relu of the network.
TEST(ConvOpTest, SmallGroupsExpandedToADenseConvolution) {
  for (bool channels_last : {false, true}) {
    Check({.n = 2,
           .c = 24,
           .m = 112,
           .group = 4,
           .in = {6, 7},
           .kernel = {1, 1},
           .strides = {1, 1},
           .dilations = {1, 1},
           .pads = {0, 0, 0, 0}},
          {.activation = "Relu", .channels_last = channels_last});
  }
}

TEST(ConvOpTest, OneAndThreeSpatialDims) {
  Check({.n = 2,
         .c = 3,
         .m = 2,
         .in = {10},
         .kernel = {3},
         .strides = {2},
         .dilations = {1},
         .pads = {1, 0},
         .bias = false});
  Check({.n = 1,
         .c = 2,
         .m = 3,
         .in = {5, 6, 4},
         .kernel = {3, 2, 2},
         .strides = {1, 2, 1},
         .dilations = {1, 1, 2},
         .pads = {1, 0, 1, 1, 1, 0}});
}

TEST(ConvOpTest, WeightsFromAGraphInput) {
  Check({.n = 1,
         .c = 4,
         .m = 8,
         .in = {6, 6},
         .kernel = {3, 3},
         .strides = {1, 1},
         .dilations = {1, 1},
         .pads = {1, 1, 1, 1}},
        {.runtime_weights = true});
}

TEST(ConvOpTest, FusedReluMatchesConvThenRelu) {
  Check({.n = 2,
         .c = 16,
         .m = 32,
         .in = {14, 14},
         .kernel = {1, 1},
         .strides = {1, 1},
         .dilations = {1, 1},
         .pads = {0, 0, 0, 0}},
        {.activation = "Relu"});
}

// auto_pad SAME_UPPER/SAME_LOWER/VALID against explicit pads computed by hand
// from the spec: total = (ceil(in / s) - 1) * s + k - in.
TEST(ConvOpTest, AutoPadMatchesExplicitPads) {
  const Shape x_shape = {1, 2, 7, 7};
  const auto x = testing::RandomFloats(98, 5);
  const auto w = testing::RandomFloats(2 * 2 * 4 * 4, 6);
  struct Mode {
    std::string auto_pad;
    std::vector<int64_t> pads;  // out 4 per axis, total pad 3*2+4-7 = 3
    Shape out;
  };
  for (const Mode& mode : {Mode{"SAME_UPPER", {1, 1, 2, 2}, {1, 2, 4, 4}},
                           Mode{"SAME_LOWER", {2, 2, 1, 1}, {1, 2, 4, 4}},
                           Mode{"VALID", {0, 0, 0, 0}, {1, 2, 2, 2}}}) {
    auto run = [&](bool automatic) {
      testing::OnnxModelBuilder b(11);
      b.Input("x", x_shape).Output("y").FloatInitializer("w", {2, 2, 4, 4}, w);
      auto& node = b.Node("Conv", {"x", "w"}, {"y"});
      testing::SetIntsAttr(node, "strides", {2, 2});
      if (automatic) {
        testing::SetStringAttr(node, "auto_pad", mode.auto_pad);
      } else {
        testing::SetIntsAttr(node, "pads", mode.pads);
      }
      auto model = b.Load();
      EXPECT_TRUE(model.ok()) << model.status();
      return testing::RunModelOnce(*model, {{x_shape, x}});
    };
    auto got = run(true);
    auto want = run(false);
    ASSERT_TRUE(got.ok() && want.ok()) << mode.auto_pad;
    EXPECT_EQ((*got)[0].shape, mode.out) << mode.auto_pad;
    ExpectNear((*got)[0].data, (*want)[0].data, mode.auto_pad);
  }
}

TEST(ConvOpTest, MismatchedChannelsNameTheShapes) {
  testing::OnnxModelBuilder b(17);
  b.Input("x", {1, 3, 5, 5}).Output("y");
  b.FloatInitializer("w", {2, 4, 3, 3}, std::vector<float>(72, 0.0f));
  b.Node("Conv", {"x", "w"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out =
      testing::RunModelOnce(*model, {{{1, 3, 5, 5}, std::vector<float>(75)}});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
  EXPECT_NE(out.status().message().find("has 3 channels"), std::string::npos)
      << out.status();
}

// channels_last=1: the same convolutions on [N, spatial..., C] activations.
// The channel counts are large enough that oneDNN may pick a channels-last
// algorithm itself (no reorder) on machines that have one.
TEST(ConvOpTest, ChannelsLastStridedPaddedWithBiasAndRelu) {
  Check({.n = 1,
         .c = 16,
         .m = 32,
         .in = {9, 10},
         .kernel = {3, 3},
         .strides = {2, 2},
         .dilations = {1, 1},
         .pads = {1, 1, 1, 1}},
        {.activation = "Relu", .channels_last = true});
}

TEST(ConvOpTest, ChannelsLastPointwise) {
  Check({.n = 1,
         .c = 32,
         .m = 16,
         .in = {7, 7},
         .kernel = {1, 1},
         .strides = {1, 1},
         .dilations = {1, 1},
         .pads = {0, 0, 0, 0},
         .bias = false},
        {.channels_last = true});
}

TEST(ConvOpTest, ChannelsLastGrouped) {
  Check({.n = 1,
         .c = 8,
         .m = 12,
         .group = 2,
         .in = {6, 5},
         .kernel = {3, 3},
         .strides = {1, 1},
         .dilations = {1, 1},
         .pads = {1, 1, 1, 1}},
        {.channels_last = true});
}

TEST(ConvOpTest, ChannelsLastOneSpatialDim) {
  Check({.n = 1,
         .c = 6,
         .m = 4,
         .in = {11},
         .kernel = {3},
         .strides = {2},
         .dilations = {1},
         .pads = {1, 0}},
        {.channels_last = true});
}

TEST(ConvOpTest, ChannelsLastBatchOfTwo) {
  Check({.n = 2,
         .c = 16,
         .m = 16,
         .in = {8, 8},
         .kernel = {3, 3},
         .strides = {1, 1},
         .dilations = {1, 1},
         .pads = {1, 1, 1, 1}},
        {.activation = "Relu", .channels_last = true});
}

// X [1, 4, 5, 3] fits W [2, 4, 3, 3] read as NCHW, but channels-last it has
// 3 channels.
TEST(ConvOpTest, ChannelsLastMismatchedChannelsIsInvalid) {
  testing::OnnxModelBuilder b(17);
  b.Input("x", {1, 4, 5, 3}).Output("y");
  b.FloatInitializer("w", {2, 4, 3, 3}, std::vector<float>(72, 0.0f));
  auto& node = b.Node("FusedConv", {"x", "w"}, {"y"});
  node.set_domain(OpRegistry::kInternalDomain);
  testing::SetIntAttr(node, "channels_last", 1);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out =
      testing::RunModelOnce(*model, {{{1, 4, 5, 3}, std::vector<float>(60)}});
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("channels-last"), std::string::npos)
      << out.status();
  EXPECT_NE(out.status().message().find("has 3 channels"), std::string::npos)
      << out.status();
}

TEST(ConvOpTest, ChannelsLastMustBeZeroOrOne) {
  testing::OnnxModelBuilder b(17);
  b.Input("x", {1, 1, 5, 5}).Output("y");
  b.FloatInitializer("w", {1, 1, 3, 3}, std::vector<float>(9, 0.0f));
  auto& node = b.Node("FusedConv", {"x", "w"}, {"y"});
  node.set_domain(OpRegistry::kInternalDomain);
  testing::SetIntAttr(node, "channels_last", 2);
  auto model = b.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument)
      << model.status();
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("channels_last"), std::string::npos)
      << model.status();
}

TEST(ConvOpTest, BadAutoPadFailsAtLoad) {
  testing::OnnxModelBuilder b(17);
  b.Input("x", {1, 1, 5, 5}).Output("y");
  b.FloatInitializer("w", {1, 1, 3, 3}, std::vector<float>(9, 0.0f));
  auto& node = b.Node("Conv", {"x", "w"}, {"y"});
  testing::SetStringAttr(node, "auto_pad", "SOMETIMES");
  auto model = b.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument)
      << model.status();
  EXPECT_NE(model.status().message().find("SOMETIMES"), std::string::npos);
}

}  // namespace
}  // namespace coalesce
