#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

std::vector<float> Iota(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

// Naive 1-axis index list for a slice, per the ONNX clamping rules.
std::vector<int64_t> NaiveIndices(int64_t dim, int64_t start, int64_t end,
                                  int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  std::vector<int64_t> out;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    for (int64_t i = start; i < end; i += step) out.push_back(i);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    for (int64_t i = start; i > end; i += step) out.push_back(i);
  }
  return out;
}

TEST(SliceOpTest, InputsWithNegativeClampedAndStepsMatchNaive) {
  const Shape x = {4, 5};
  const struct {
    int64_t start, end, step;
  } cases[] = {{1, 3, 1},         {-3, -1, 1},
               {0, 100, 2},       {-100, 2, 1},
               {4, 0, -1},        {-1, -100, -2},
               {3, 3, 1},         {100, 0, -1},
               {0, INT64_MAX, 3}, {INT64_MAX, INT64_MIN, -1}};
  for (const auto& c : cases) {
    for (int64_t axis : {0, 1, -1}) {
      testing::OnnxModelBuilder b(/*opset=*/13);
      b.Input("x", x).Output("y");
      b.Int64Initializer("s", {1}, {c.start})
          .Int64Initializer("e", {1}, {c.end});
      b.Int64Initializer("a", {1}, {axis})
          .Int64Initializer("st", {1}, {c.step});
      b.Node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
      auto model = b.Load();
      ASSERT_TRUE(model.ok()) << model.status();
      auto out = testing::RunModelOnce(*model, {{x, Iota(20)}});
      ASSERT_TRUE(out.ok()) << out.status();
      const int64_t a = axis < 0 ? axis + 2 : axis;
      const std::vector<int64_t> idx =
          NaiveIndices(x[a], c.start, c.end, c.step);
      std::vector<float> want;
      for (int64_t i = 0; i < (a == 0 ? (int64_t)idx.size() : 4); ++i)
        for (int64_t j = 0; j < (a == 1 ? (int64_t)idx.size() : 5); ++j)
          want.push_back((a == 0 ? idx[i] : i) * 5 + (a == 1 ? idx[j] : j));
      EXPECT_EQ((*out)[0].data, want)
          << c.start << ":" << c.end << ":" << c.step << " axis " << axis;
    }
  }
}

// Steps far beyond the axis (INT64_MAX, INT64_MIN) select one element, as
// any step of at least the axis does, without overflowing.
TEST(SliceOpTest, HugeStepsSelectOneElement) {
  for (int64_t step : {std::numeric_limits<int64_t>::max(),
                       std::numeric_limits<int64_t>::min()}) {
    testing::OnnxModelBuilder b(/*opset=*/13);
    b.Input("x", {6}).Output("y");
    const bool up = step > 0;
    b.Int64Initializer("starts", {1}, {up ? 1 : 4});
    b.Int64Initializer("ends", {1}, {up ? 6 : -7});
    b.Int64Initializer("axes", {1}, {0});
    b.Int64Initializer("steps", {1}, {step});
    b.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelOnce(*model, {{{6}, Iota(6)}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].data, (std::vector<float>{up ? 1.0f : 4.0f})) << step;
  }
}

TEST(SliceOpTest, AttributesBeforeOpset10AndDefaultAxes) {
  testing::OnnxModelBuilder b(/*opset=*/9);
  b.Input("x", {4, 5}).Output("y");
  auto& n = b.Node("Slice", {"x"}, {"y"});
  testing::SetIntsAttr(n, "starts", {1, -2});
  testing::SetIntsAttr(n, "ends", {3, 1000});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{{4, 5}, Iota(20)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2, 2}));
  EXPECT_EQ((*out)[0].data, (std::vector<float>{8, 9, 13, 14}));
}

TEST(SplitOpTest, AttributeInputAndNumOutputs) {
  struct Case {
    int64_t opset;
    std::vector<int64_t> split;  // empty: even split
    int outputs;
    std::vector<int64_t> want;  // sizes along axis 1
  };
  for (const Case& c : std::vector<Case>{{11, {2, 5}, 2, {2, 5}},
                                         {13, {1, 6}, 2, {1, 6}},
                                         {13, {}, 1, {7}},
                                         {18, {}, 3, {3, 3, 1}}}) {
    testing::OnnxModelBuilder b(c.opset);
    b.Input("x", {2, 7});
    std::vector<std::string> outs;
    for (int i = 0; i < c.outputs; ++i) {
      outs.push_back("y" + std::to_string(i));
      b.Output(outs.back());
    }
    std::vector<std::string> ins = {"x"};
    if (c.opset >= 13 && !c.split.empty()) {
      b.Int64Initializer("split", {(int64_t)c.split.size()}, c.split);
      ins.push_back("split");
    }
    auto& n = b.Node("Split", ins, outs);
    testing::SetIntAttr(n, "axis", -1);
    if (c.opset < 13 && !c.split.empty())
      testing::SetIntsAttr(n, "split", c.split);
    if (c.opset >= 18) testing::SetIntAttr(n, "num_outputs", c.outputs);
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelOnce(*model, {{{2, 7}, Iota(14)}});
    ASSERT_TRUE(out.ok()) << out.status();
    int64_t begin = 0;
    for (int i = 0; i < c.outputs; ++i) {
      std::vector<float> want;
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t k = begin; k < begin + c.want[i]; ++k)
          want.push_back(r * 7 + k);
      EXPECT_EQ((*out)[i].shape, (Shape{2, c.want[i]})) << "opset " << c.opset;
      EXPECT_EQ((*out)[i].data, want) << "opset " << c.opset << " output " << i;
      begin += c.want[i];
    }
  }
}

TEST(SplitOpTest, UnevenSplitBeforeOpset18Rejected) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {7}).Output("a").Output("b");
  b.Node("Split", {"x"}, {"a", "b"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(testing::RunModelOnce(*model, {{{7}, Iota(7)}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Split sizes whose sum int64 cannot hold are refused, not overflowed.
TEST(SplitOpTest, OverflowingSplitSizesRejected) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {7}).Output("a").Output("b");
  b.Int64Initializer("split", {2}, {int64_t{1} << 62, (int64_t{1} << 62) + 7});
  b.Node("Split", {"x", "split"}, {"a", "b"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(testing::RunModelOnce(*model, {{{7}, Iota(7)}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
