#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

void Check(const std::vector<int64_t>& perm, const Shape& want_shape) {
  const Shape in_shape = {2, 3, 4};
  testing::OnnxModelBuilder builder;
  builder.Input("x", in_shape).Output("y");
  auto& node = builder.Node("Transpose", {"x"}, {"y"});
  if (!perm.empty()) testing::SetIntsAttr(node, "perm", perm);
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = i;
  auto out = testing::RunModelOnce(*model, {HostTensor{in_shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, want_shape);
  const std::vector<int64_t> p =
      perm.empty() ? std::vector<int64_t>{2, 1, 0} : perm;
  // Reference: x[i0][i1][i2] lands at y[i_p0][i_p1][i_p2].
  for (int64_t i0 = 0; i0 < 2; ++i0)
    for (int64_t i1 = 0; i1 < 3; ++i1)
      for (int64_t i2 = 0; i2 < 4; ++i2) {
        const int64_t idx[3] = {i0, i1, i2};
        const int64_t f =
            (idx[p[0]] * want_shape[1] + idx[p[1]]) * want_shape[2] + idx[p[2]];
        ASSERT_EQ((*out)[0].data[f], x[(i0 * 3 + i1) * 4 + i2]);
      }
}

TEST(TransposeOpTest, DefaultReverses) { Check({}, {4, 3, 2}); }
TEST(TransposeOpTest, ExplicitPerms) {
  Check({0, 2, 1}, {2, 4, 3});
  Check({1, 0, 2}, {3, 2, 4});
  Check({2, 0, 1}, {4, 2, 3});
}
// Large enough for the prepared oneDNN reorder: NCHW -> NHWC and back.
TEST(TransposeOpTest, LargeFloatTensorsTakeTheReorder) {
  const Shape in_shape = {2, 32, 24, 25};
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0, 2, 3, 1}, std::vector<int64_t>{0, 3, 1, 2}}) {
    testing::OnnxModelBuilder builder;
    builder.Input("x", in_shape).Output("y");
    testing::SetIntsAttr(builder.Node("Transpose", {"x"}, {"y"}), "perm", perm);
    auto model = builder.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    std::vector<float> x(2 * 32 * 24 * 25);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
    auto out = testing::RunModelOnce(*model, {HostTensor{in_shape, x}});
    ASSERT_TRUE(out.ok()) << out.status();
    const Shape& y = (*out)[0].shape;
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 32; ++b)
        for (int64_t c = 0; c < 24; ++c)
          for (int64_t d = 0; d < 25; ++d) {
            const int64_t idx[4] = {a, b, c, d};
            const int64_t f =
                ((idx[perm[0]] * y[1] + idx[perm[1]]) * y[2] + idx[perm[2]]) *
                    y[3] +
                idx[perm[3]];
            ASSERT_EQ((*out)[0].data[f], x[((a * 32 + b) * 24 + c) * 25 + d]);
          }
  }
}

TEST(TransposeOpTest, BadPermRejected) {
  testing::OnnxModelBuilder builder;
  builder.Input("x", {2, 3}).Output("y");
  testing::SetIntsAttr(builder.Node("Transpose", {"x"}, {"y"}), "perm", {0, 0});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok());
  auto out = testing::RunModelOnce(*model,
                                   {HostTensor{{2, 3}, std::vector<float>(6)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
