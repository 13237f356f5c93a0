#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

// A 2-D transposed convolution case.
struct Case {
  int64_t n = 1, c = 2, m_per_group = 3, group = 1;
  int64_t h = 3, w = 4, kh = 3, kw = 2;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};
  std::vector<int64_t> output_padding;  // empty: attribute absent
  std::vector<int64_t> output_shape;    // empty: attribute absent
  std::string auto_pad;
};

// Scatter form of the definition: every input pixel adds x * w to the output
// pixel at i * stride + k * dilation - pad_begin.
std::vector<float> Reference(const Case& t, int64_t oh, int64_t ow, int64_t ph,
                             int64_t pw, const std::vector<float>& x,
                             const std::vector<float>& w,
                             const std::vector<float>& b) {
  const int64_t m = t.m_per_group * t.group, cg = t.c / t.group;
  std::vector<double> y(t.n * m * oh * ow, 0.0);
  for (int64_t n = 0; n < t.n; ++n)
    for (int64_t c = 0; c < t.c; ++c)
      for (int64_t i = 0; i < t.h; ++i)
        for (int64_t j = 0; j < t.w; ++j)
          for (int64_t mm = 0; mm < t.m_per_group; ++mm)
            for (int64_t ki = 0; ki < t.kh; ++ki)
              for (int64_t kj = 0; kj < t.kw; ++kj) {
                const int64_t r = i * t.sh + ki * t.dh - ph;
                const int64_t q = j * t.sw + kj * t.dw - pw;
                if (r < 0 || r >= oh || q < 0 || q >= ow) continue;
                const int64_t out_c = (c / cg) * t.m_per_group + mm;
                const float xv = x[((n * t.c + c) * t.h + i) * t.w + j];
                const float wv =
                    w[((c * t.m_per_group + mm) * t.kh + ki) * t.kw + kj];
                y[((n * m + out_c) * oh + r) * ow + q] += double(xv) * wv;
              }
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i)
    out[i] = static_cast<float>(y[i] + b[(i / (oh * ow)) % m]);
  return out;
}

// Expects output dims (oh, ow) and begin pads (ph, pw), worked out by hand in
// each test from the spec's formulas.
void Check(const Case& t, int64_t oh, int64_t ow, int64_t ph, int64_t pw) {
  const int64_t m = t.m_per_group * t.group;
  const Shape x_shape = {t.n, t.c, t.h, t.w};
  const Shape w_shape = {t.c, t.m_per_group, t.kh, t.kw};
  const auto x = testing::RandomFloats(t.n * t.c * t.h * t.w, 11);
  const auto w = testing::RandomFloats(t.c * t.m_per_group * t.kh * t.kw, 12);
  const auto b = testing::RandomFloats(m, 13);
  testing::OnnxModelBuilder builder(17);
  builder.Input("x", x_shape).Output("y").FloatInitializer("w", w_shape, w);
  builder.FloatInitializer("b", {m}, b);
  auto& node = builder.Node("ConvTranspose", {"x", "w", "b"}, {"y"});
  testing::SetIntAttr(node, "group", t.group);
  testing::SetIntsAttr(node, "strides", {t.sh, t.sw});
  testing::SetIntsAttr(node, "dilations", {t.dh, t.dw});
  if (t.auto_pad.empty()) testing::SetIntsAttr(node, "pads", t.pads);
  if (!t.auto_pad.empty()) testing::SetStringAttr(node, "auto_pad", t.auto_pad);
  if (!t.output_padding.empty())
    testing::SetIntsAttr(node, "output_padding", t.output_padding);
  if (!t.output_shape.empty())
    testing::SetIntsAttr(node, "output_shape", t.output_shape);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{x_shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{t.n, m, oh, ow}));
  const std::vector<float> want = Reference(t, oh, ow, ph, pw, x, w, b);
  ASSERT_EQ((*out)[0].data.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR((*out)[0].data[i], want[i], 1e-4 + 1e-4 * std::abs(want[i]))
        << i;
}

TEST(ConvTransposeOpTest, StrideOneNoPadding) {
  // out = (in - 1) + k: 3 - 1 + 3 = 5, 4 - 1 + 2 = 5.
  Check({}, 5, 5, 0, 0);
}

TEST(ConvTransposeOpTest, StridesDilationsPadsAndGroups) {
  Case t{.n = 2,
         .c = 4,
         .m_per_group = 2,
         .group = 2,
         .h = 4,
         .w = 3,
         .kh = 3,
         .kw = 3,
         .sh = 2,
         .sw = 3,
         .dh = 2,
         .dw = 1,
         .pads = {1, 0, 2, 1}};
  // out = s(in-1) + d(k-1) + 1 - pads: 2*3 + 5 - 3 = 8; 3*2 + 3 - 1 = 8.
  Check(t, 8, 8, 1, 0);
}

TEST(ConvTransposeOpTest, OutputPadding) {
  Case t{.sh = 2, .sw = 2, .output_padding = {1, 0}};
  // 2*2 + 3 + 1 = 8; 2*3 + 2 = 8.
  Check(t, 8, 8, 0, 0);
}

TEST(ConvTransposeOpTest, OutputShapeSetsThePads) {
  Case t{.sh = 2, .sw = 2, .output_shape = {6, 7}};
  // full 7 and 8; total pad 1 each; not SAME_UPPER: begin = total - total/2.
  Check(t, 6, 7, 1, 1);
}

TEST(ConvTransposeOpTest, SameUpperGivesInputTimesStride) {
  Case t{.sh = 2, .sw = 2, .auto_pad = "SAME_UPPER"};
  // target 6 and 8 from full 7 and 8: totals 1 and 0, begin = total / 2.
  Check(t, 6, 8, 0, 0);
}

// output_padding and output_shape values int64 arithmetic cannot hold are
// refused when planning, not overflowed.
TEST(ConvTransposeOpTest, HugeOutputPaddingAndShapeAreInvalid) {
  for (bool shape : {false, true}) {
    testing::OnnxModelBuilder b(17);
    b.Input("x", {1, 1, 2, 2}).Output("y");
    b.FloatInitializer("w", {1, 1, 1, 1}, {1.0f});
    auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"});
    if (shape) {
      testing::SetIntsAttr(node, "output_shape",
                           {std::numeric_limits<int64_t>::min(), 2});
    } else {
      testing::SetIntsAttr(node, "output_padding",
                           {std::numeric_limits<int64_t>::max(), 0});
    }
    auto model = b.Load();
    absl::Status status = model.status();
    if (model.ok()) {
      status = testing::RunModelOnce(*model, {{{1, 1, 2, 2}, {1, 2, 3, 4}}})
                   .status();
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << shape << " " << status;
  }
}

}  // namespace
}  // namespace coalesce
