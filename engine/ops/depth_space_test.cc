#include <cstdint>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

// The ONNX definitions as reshape + transpose, evaluated index by index.
// DepthToSpace DCR: [N, b, b, C', H, W] -> transpose (0, 3, 4, 1, 5, 2);
//              CRD: [N, C', b, b, H, W] -> transpose (0, 1, 4, 2, 5, 3).
std::vector<float> NaiveDepthToSpace(const std::vector<float>& x,
                                     const Shape& s, int64_t b, bool crd) {
  const int64_t n = s[0], c = s[1] / (b * b), h = s[2], w = s[3];
  std::vector<float> y;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t bi = 0; bi < b; ++bi)
          for (int64_t iw = 0; iw < w; ++iw)
            for (int64_t bj = 0; bj < b; ++bj) {
              const int64_t channel =
                  crd ? (ic * b + bi) * b + bj : (bi * b + bj) * c + ic;
              y.push_back(x[((in * s[1] + channel) * h + ih) * w + iw]);
            }
  return y;
}

// SpaceToDepth: [N, C, H', b, W', b] -> DCR transpose (0, 3, 5, 1, 2, 4),
// CRD transpose (0, 1, 3, 5, 2, 4).
std::vector<float> NaiveSpaceToDepth(const std::vector<float>& x,
                                     const Shape& s, int64_t b, bool crd) {
  const int64_t n = s[0], c = s[1], h = s[2] / b, w = s[3] / b;
  std::vector<float> y(x.size());
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t bj = 0; bj < b; ++bj)
          for (int64_t oh = 0; oh < h; ++oh)
            for (int64_t ow = 0; ow < w; ++ow) {
              const int64_t oc =
                  crd ? (ic * b + bi) * b + bj : (bi * b + bj) * c + ic;
              y[((in * c * b * b + oc) * h + oh) * w + ow] =
                  x[((in * c + ic) * s[2] + oh * b + bi) * s[3] + ow * b + bj];
            }
  return y;
}

void Check(const char* op, const Shape& shape, int64_t block,
           const std::string& mode, int64_t opset, const Shape& want_shape) {
  testing::OnnxModelBuilder b(opset);
  b.Input("x", shape).Output("y");
  auto& node = b.Node(op, {"x"}, {"y"});
  testing::SetIntAttr(node, "blocksize", block);
  if (!mode.empty()) testing::SetStringAttr(node, "mode", mode);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> x(count);
  for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>(i);
  auto out = testing::RunModelOnce(*model, {HostTensor{shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, want_shape);
  const bool crd = mode == "CRD";
  const auto want = std::string(op) == "DepthToSpace"
                        ? NaiveDepthToSpace(x, shape, block, crd)
                        : NaiveSpaceToDepth(x, shape, block, crd);
  EXPECT_EQ((*out)[0].data, want) << op << " " << mode;
}

TEST(DepthSpaceOpTest, DepthToSpaceModes) {
  Check("DepthToSpace", {2, 8, 3, 2}, 2, "", 13, {2, 2, 6, 4});
  Check("DepthToSpace", {2, 8, 3, 2}, 2, "DCR", 13, {2, 2, 6, 4});
  Check("DepthToSpace", {2, 8, 3, 2}, 2, "CRD", 13, {2, 2, 6, 4});
  Check("DepthToSpace", {1, 18, 2, 3}, 3, "CRD", 11, {1, 2, 6, 9});
  Check("DepthToSpace", {1, 4, 2, 2}, 2, "", 1, {1, 1, 4, 4});
}

TEST(DepthSpaceOpTest, SpaceToDepthModes) {
  Check("SpaceToDepth", {2, 3, 4, 6}, 2, "", 13, {2, 12, 2, 3});
  Check("SpaceToDepth", {1, 2, 6, 3}, 3, "", 1, {1, 18, 2, 1});
  // mode arrives in SpaceToDepth-28.
  Check("SpaceToDepth", {1, 2, 4, 6}, 2, "DCR", 28, {1, 8, 2, 3});
  Check("SpaceToDepth", {2, 3, 4, 6}, 2, "CRD", 28, {2, 12, 2, 3});
}

TEST(DepthSpaceOpTest, RoundTripIsIdentity) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {1, 2, 4, 6}).Output("y");
  testing::SetIntAttr(b.Node("SpaceToDepth", {"x"}, {"t"}), "blocksize", 2);
  testing::SetIntAttr(b.Node("DepthToSpace", {"t"}, {"y"}), "blocksize", 2);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const auto x = testing::RandomFloats(48, /*seed=*/5);
  auto out = testing::RunModelOnce(*model, {HostTensor{{1, 2, 4, 6}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data, x);
}

TEST(DepthSpaceOpTest, Int64Elements) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {1, 4, 1, 1}, onnx::TensorProto::INT64)
      .Output("y", {}, onnx::TensorProto::INT64);
  testing::SetIntAttr(b.Node("DepthToSpace", {"x"}, {"y"}), "blocksize", 2);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model, {testing::MakeTyped<int64_t>(DataType::kInt64, {1, 4, 1, 1},
                                           {10, 20, 30, 40})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{1, 1, 2, 2}));
  EXPECT_EQ((*out)[0].values<int64_t>(),
            (std::vector<int64_t>{10, 20, 30, 40}));
}

absl::Status Plan(const char* op, const Shape& shape, int64_t block,
                  const std::string& mode = "") {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", shape).Output("y");
  auto& node = b.Node(op, {"x"}, {"y"});
  if (block > 0) testing::SetIntAttr(node, "blocksize", block);
  if (!mode.empty()) testing::SetStringAttr(node, "mode", mode);
  return testing::LoadAndRunOnZeros(b, shape);
}

TEST(DepthSpaceOpTest, BadAttributesAndShapesAreRejected) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(Plan("DepthToSpace", {1, 4, 2, 2}, /*block=*/0).code(), kInvalid);
  EXPECT_EQ(Plan("DepthToSpace", {1, 4, 2, 2}, 2, "XYZ").code(), kInvalid);
  EXPECT_EQ(Plan("DepthToSpace", {1, 6, 2, 2}, 2).code(), kInvalid);
  EXPECT_EQ(Plan("DepthToSpace", {4, 2, 2}, 2).code(), kInvalid);
  EXPECT_EQ(Plan("SpaceToDepth", {1, 1, 3, 4}, 2).code(), kInvalid);
  EXPECT_EQ(Plan("SpaceToDepth", {1, 1, 4, 4}, -1).code(), kInvalid);
  // Dims whose product with the block int64 cannot hold (an empty batch
  // keeps the byte size at 0; the fuzzer's 8.2e18 * 4).
  const int64_t huge = int64_t{1} << 62;
  EXPECT_EQ(Plan("DepthToSpace", {0, 4, huge, 2}, 2).code(), kInvalid);
  EXPECT_EQ(Plan("SpaceToDepth", {0, huge, 2, 2}, 2).code(), kInvalid);
}

}  // namespace
}  // namespace coalesce
