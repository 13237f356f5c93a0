#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

// Naive source index per the mode; -1 for the constant border.
int64_t Source(int64_t o, int64_t n, int64_t begin, const std::string& mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  return i < 0 ? -i : 2 * (n - 1) - i;  // reflect, pads < n
}

TEST(PadOpTest, ModesAndOpsetFormsMatchNaive) {
  const Shape x = {3, 4};
  std::vector<float> data(12);
  for (int i = 0; i < 12; ++i) data[i] = i + 1;
  const std::vector<int64_t> pads = {1, 2, 2, 1};  // begins then ends
  for (const std::string mode : {"constant", "reflect", "edge"}) {
    for (int64_t opset : {2, 11, 18}) {
      testing::OnnxModelBuilder b(opset);
      b.Input("x", x).Output("y");
      std::vector<std::string> ins = {"x"};
      if (opset >= 11) {
        b.Int64Initializer("pads", {4}, pads);
        b.FloatInitializer("value", {}, {-7.0f});
        ins = {"x", "pads", "value"};
      }
      auto& n = b.Node("Pad", ins, {"y"});
      testing::SetStringAttr(n, "mode", mode);
      if (opset < 11) {
        testing::SetIntsAttr(n, "pads", pads);
        testing::SetFloatAttr(n, "value", -7.0f);
      }
      auto model = b.Load();
      ASSERT_TRUE(model.ok()) << model.status();
      auto out = testing::RunModelOnce(*model, {{x, data}});
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ((*out)[0].shape, (Shape{6, 7}));
      std::vector<float> want;
      for (int64_t r = 0; r < 6; ++r)
        for (int64_t c = 0; c < 7; ++c) {
          const int64_t sr = Source(r, 3, 1, mode), sc = Source(c, 4, 2, mode);
          want.push_back(sr < 0 || sc < 0 ? -7.0f : data[sr * 4 + sc]);
        }
      EXPECT_EQ((*out)[0].data, want) << mode << " opset " << opset;
    }
  }
}

TEST(PadOpTest, AxesInputPadsOnlyThoseAxes) {
  testing::OnnxModelBuilder b(/*opset=*/18);
  b.Input("x", {2, 2}).Output("y");
  b.Int64Initializer("pads", {2}, {1, 0}).Int64Initializer("axes", {1}, {-1});
  b.Node("Pad", {"x", "pads", "", "axes"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{{2, 2}, {1, 2, 3, 4}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2, 3}));
  EXPECT_EQ((*out)[0].data, (std::vector<float>{0, 1, 2, 0, 3, 4}));
}

// Pads whose sum with the axis int64 cannot hold (the fuzzer's
// 7.0e18 + 6.0e18) are refused, not overflowed.
TEST(PadOpTest, OverflowingPadsAreInvalid) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2}).Output("y");
  b.Int64Initializer(
      "pads", {2},
      {int64_t{7021203130649108332}, int64_t{5985858090531160480}});
  b.Node("Pad", {"x", "pads"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{{2}, {1, 2}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
}

// A pad that crops more than the axis is refused even when the other end
// pads it back (INT64_MIN and INT64_MAX on an axis of 2 sum to 1).
TEST(PadOpTest, CroppingBeyondTheAxisIsInvalid) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2}).Output("y");
  b.Int64Initializer("pads", {2},
                     {std::numeric_limits<int64_t>::min(),
                      std::numeric_limits<int64_t>::max()});
  b.Node("Pad", {"x", "pads"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{{2}, {1, 2}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
}

TEST(PadOpTest, WrapModeRejected) {
  testing::OnnxModelBuilder b(/*opset=*/19);
  b.Input("x", {2}).Output("y");
  b.Int64Initializer("pads", {2}, {1, 1});
  testing::SetStringAttr(b.Node("Pad", {"x", "pads"}, {"y"}), "mode", "wrap");
  EXPECT_EQ(b.Load().status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
