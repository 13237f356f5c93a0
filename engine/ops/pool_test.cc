#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;
using testing::TypedTensor;

// Attributes of one test pooling, spelled out per spatial axis.
struct PoolCase {
  std::vector<int64_t> kernel = {};
  std::vector<int64_t> strides = {};    // empty: attribute absent
  std::vector<int64_t> dilations = {};  // empty: attribute absent
  std::vector<int64_t> pads = {};       // empty: attribute absent
  std::string auto_pad = {};            // empty: attribute absent
  int64_t ceil_mode = -1;               // -1: attribute absent
  int64_t count_include_pad = -1;       // -1: attribute absent
  int64_t storage_order = -1;           // -1: attribute absent
};

std::vector<int64_t> OrOnes(const std::vector<int64_t>& v, size_t n) {
  return v.empty() ? std::vector<int64_t>(n, 1) : v;
}

// Output size, pads begin and end along one axis, from the ONNX formulas.
struct AxisRef {
  int64_t out, begin, end;
};

AxisRef ReferenceAxis(const PoolCase& c, size_t i, int64_t in) {
  const size_t n = c.kernel.size();
  const int64_t s = OrOnes(c.strides, n)[i], d = OrOnes(c.dilations, n)[i];
  const int64_t span = (c.kernel[i] - 1) * d + 1;
  if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
    const int64_t out = static_cast<int64_t>(std::ceil(double(in) / s));
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
    const int64_t small = total / 2;
    if (c.auto_pad == "SAME_UPPER") return {out, small, total - small};
    return {out, total - small, small};
  }
  int64_t b = 0, e = 0;
  if (!c.pads.empty() && c.auto_pad != "VALID")
    b = c.pads[i], e = c.pads[i + n];
  const double size = double(in + b + e - span) / s + 1;
  if (c.ceil_mode != 1) return {int64_t(std::floor(size)), b, e};
  int64_t out = int64_t(std::ceil(size));
  if ((out - 1) * s >= in + b) --out;  // last window starts in the padding end
  return {out, b, e};
}

// Naive pooling of a [1, C, spatial...] input by enumerating each window's
// taps; for max, also the row-major / column-major argmax.
struct Reference {
  Shape shape;
  std::vector<float> y = {};
  std::vector<int64_t> indices = {};
};

Reference NaivePool(const PoolCase& c, bool max, const Shape& x_shape,
                    const std::vector<float>& x) {
  const size_t n = c.kernel.size();
  std::vector<AxisRef> ax;
  Reference r;
  r.shape = {x_shape[0], x_shape[1]};
  int64_t outputs = x_shape[0] * x_shape[1], plane = 1;
  for (size_t i = 0; i < n; ++i) {
    ax.push_back(ReferenceAxis(c, i, x_shape[i + 2]));
    r.shape.push_back(ax[i].out);
    outputs *= ax[i].out;
    plane *= x_shape[i + 2];
  }
  const std::vector<int64_t> s = OrOnes(c.strides, n),
                             d = OrOnes(c.dilations, n);
  for (int64_t flat = 0; flat < outputs; ++flat) {
    // Decompose flat output index.
    std::vector<int64_t> o(n);
    int64_t rest = flat;
    for (size_t i = n; i-- > 0;) o[i] = rest % ax[i].out, rest /= ax[i].out;
    const int64_t p = rest;  // n * C + c
    // Enumerate window taps.
    int64_t taps = 1;
    for (size_t i = 0; i < n; ++i) taps *= c.kernel[i];
    double sum = 0;
    int64_t inside = 0, in_padded = 0, best_index = -1;
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < taps; ++t) {
      int64_t tr = t, row_major = 0, col_major = 0, col_stride = 1;
      bool in_x = true, in_pad = true;
      std::vector<int64_t> pos(n);
      for (size_t i = n; i-- > 0;) {
        const int64_t k = tr % c.kernel[i];
        tr /= c.kernel[i];
        pos[i] = o[i] * s[i] - ax[i].begin + k * d[i];
      }
      for (size_t i = 0; i < n; ++i) {
        const int64_t size = x_shape[i + 2];
        in_x = in_x && pos[i] >= 0 && pos[i] < size;
        in_pad = in_pad && pos[i] < size + ax[i].end;
        row_major = row_major * size + pos[i];
        col_major += pos[i] * col_stride;
        col_stride *= size;
      }
      in_padded += in_pad;
      if (!in_x) continue;
      const float v = x[p * plane + row_major];
      ++inside;
      sum += v;
      if (v > best) {
        best = v;
        best_index = p * plane + (c.storage_order == 1 ? col_major : row_major);
      }
    }
    if (max) {
      r.y.push_back(best);
      r.indices.push_back(best_index);
    } else {
      const int64_t divisor = c.count_include_pad == 1 ? in_padded : inside;
      r.y.push_back(static_cast<float>(sum / divisor));
    }
  }
  return r;
}

onnx::NodeProto& AddPoolNode(testing::OnnxModelBuilder& b, const char* op,
                             const PoolCase& c, bool indices) {
  std::vector<std::string> outputs = {"y"};
  if (indices) outputs.push_back("i");
  auto& node = b.Node(op, {"x"}, outputs);
  testing::SetIntsAttr(node, "kernel_shape", c.kernel);
  if (!c.strides.empty()) testing::SetIntsAttr(node, "strides", c.strides);
  if (!c.dilations.empty())
    testing::SetIntsAttr(node, "dilations", c.dilations);
  if (!c.pads.empty()) testing::SetIntsAttr(node, "pads", c.pads);
  if (c.ceil_mode >= 0) testing::SetIntAttr(node, "ceil_mode", c.ceil_mode);
  if (c.count_include_pad >= 0)
    testing::SetIntAttr(node, "count_include_pad", c.count_include_pad);
  if (c.storage_order >= 0)
    testing::SetIntAttr(node, "storage_order", c.storage_order);
  if (!c.auto_pad.empty()) testing::SetStringAttr(node, "auto_pad", c.auto_pad);
  return node;
}

// Runs `op` on a random input of `x_shape` and compares with NaivePool.
void CheckPool(const char* op, const PoolCase& c, const Shape& x_shape,
               bool indices = false, int64_t opset = 19) {
  const bool max = std::string(op) == "MaxPool";
  testing::OnnxModelBuilder b(opset);
  b.Input("x", x_shape).Output("y");
  if (indices) b.Output("i", {}, onnx::TensorProto::INT64);
  AddPoolNode(b, op, c, indices);
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  int64_t count = 1;
  for (int64_t d : x_shape) count *= d;
  const std::vector<float> x = testing::RandomFloats(count, /*seed=*/7);
  auto out = testing::RunModelTyped(
      *model, {testing::MakeTyped(DataType::kFp32, x_shape, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  const Reference want = NaivePool(c, max, x_shape, x);
  ASSERT_EQ((*out)[0].shape, want.shape) << op;
  const std::vector<float> got = (*out)[0].values<float>();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want.y[i], 1e-5) << op << " output " << i;
  if (indices) {
    EXPECT_EQ((*out)[1].values<int64_t>(), want.indices);
  }
}

TEST(PoolOpTest, MaxPool2dDefaults) {
  CheckPool("MaxPool", {.kernel = {3, 3}}, {2, 3, 7, 8});
}

TEST(PoolOpTest, MaxPool1dAnd3d) {
  CheckPool("MaxPool", {.kernel = {3}, .strides = {2}, .pads = {1, 1}},
            {1, 2, 11});
  CheckPool(
      "MaxPool",
      {.kernel = {2, 3, 2}, .strides = {1, 2, 2}, .pads = {0, 1, 1, 1, 0, 1}},
      {1, 2, 5, 6, 7});
}

TEST(PoolOpTest, MaxPoolStridesPadsDilations) {
  CheckPool("MaxPool",
            {.kernel = {3, 2},
             .strides = {2, 3},
             .dilations = {2, 2},
             .pads = {2, 1, 1, 0}},
            {1, 3, 12, 13});
}

TEST(PoolOpTest, MaxPoolCeilModeDropsWindowStartingInEndPadding) {
  // in 2, kernel 1, stride 2, ceil: ceil((2-1)/2)+1 = 2, but the second
  // window would start at 2 >= in + begin, so the output has 1.
  CheckPool("MaxPool", {.kernel = {1, 1}, .strides = {2, 2}, .ceil_mode = 1},
            {1, 1, 2, 2});
  CheckPool("MaxPool", {.kernel = {3, 3}, .strides = {2, 2}, .ceil_mode = 1},
            {1, 2, 8, 9});
  CheckPool("MaxPool",
            {.kernel = {3, 3},
             .strides = {3, 2},
             .pads = {1, 1, 1, 1},
             .ceil_mode = 1},
            {1, 1, 7, 6});
}

TEST(PoolOpTest, MaxPoolAutoPad) {
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(pad);
    CheckPool("MaxPool", {.kernel = {3, 2}, .strides = {2, 2}, .auto_pad = pad},
              {1, 2, 7, 8});
    CheckPool("MaxPool",
              {.kernel = {2, 2}, .dilations = {2, 1}, .auto_pad = pad},
              {1, 1, 6, 5});
  }
}

TEST(PoolOpTest, MaxPoolIndicesRowAndColumnMajor) {
  const PoolCase row = {
      .kernel = {2, 3}, .strides = {2, 2}, .pads = {1, 1, 0, 1}};
  CheckPool("MaxPool", row, {2, 3, 6, 7}, /*indices=*/true);
  PoolCase col = row;
  col.storage_order = 1;
  CheckPool("MaxPool", col, {2, 3, 6, 7}, /*indices=*/true);
  CheckPool("MaxPool", {.kernel = {2, 2, 2}, .storage_order = 1},
            {1, 2, 3, 4, 5}, /*indices=*/true);
}

TEST(PoolOpTest, AveragePoolExcludesPadByDefault) {
  CheckPool("AveragePool", {.kernel = {3, 3}, .pads = {1, 1, 1, 1}},
            {2, 2, 6, 7});
  CheckPool("AveragePool", {.kernel = {2}, .strides = {2}, .pads = {1, 1}},
            {1, 3, 9});
}

TEST(PoolOpTest, AveragePoolCountIncludePad) {
  CheckPool("AveragePool",
            {.kernel = {3, 3},
             .strides = {2, 2},
             .pads = {1, 2, 2, 1},
             .count_include_pad = 1},
            {1, 2, 7, 8});
}

TEST(PoolOpTest, AveragePoolCeilModeWithPadCountsOnlyExplicitPadding) {
  // The last window runs past in + pads_end: those positions never count.
  CheckPool("AveragePool",
            {.kernel = {3, 3},
             .strides = {2, 2},
             .pads = {1, 1, 1, 1},
             .ceil_mode = 1,
             .count_include_pad = 1},
            {1, 1, 6, 6});
  CheckPool("AveragePool",
            {.kernel = {3, 3},
             .strides = {3, 3},
             .pads = {1, 1, 1, 1},
             .ceil_mode = 1,
             .count_include_pad = 1},
            {1, 3, 2, 2});
  CheckPool("AveragePool",
            {.kernel = {2, 2}, .strides = {2, 2}, .ceil_mode = 1},
            {1, 1, 5, 5});
}

TEST(PoolOpTest, AveragePoolDilationsAndAutoPad) {
  CheckPool("AveragePool",
            {.kernel = {2, 2, 2},
             .strides = {2, 2, 2},
             .dilations = {2, 1, 2},
             .ceil_mode = 1,
             .count_include_pad = 1},
            {1, 1, 7, 6, 8});
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(pad);
    CheckPool("AveragePool",
              {.kernel = {3, 3},
               .strides = {2, 1},
               .auto_pad = pad,
               .count_include_pad = 1},
              {1, 2, 5, 6});
    CheckPool("AveragePool", {.kernel = {3, 2}, .auto_pad = pad}, {1, 1, 4, 5});
  }
}

TEST(PoolOpTest, LargeInputRunsInParallel) {
  CheckPool("MaxPool",
            {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
            {2, 16, 32, 32}, /*indices=*/true);
  CheckPool("AveragePool", {.kernel = {3, 3}, .pads = {1, 1, 1, 1}},
            {2, 16, 32, 32});
}

void CheckGlobal(const char* op, const Shape& x_shape) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", x_shape).Output("y");
  b.Node(op, {"x"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  int64_t count = 1;
  for (int64_t d : x_shape) count *= d;
  const std::vector<float> x = testing::RandomFloats(count, /*seed=*/3);
  auto out = testing::RunModelOnce(*model, {HostTensor{x_shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  Shape want_shape(x_shape.size(), 1);
  want_shape[0] = x_shape[0];
  want_shape[1] = x_shape[1];
  EXPECT_EQ((*out)[0].shape, want_shape);
  const int64_t planes = x_shape[0] * x_shape[1], plane = count / planes;
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < plane; ++i) {
      sum += x[p * plane + i];
      best = std::max(best, x[p * plane + i]);
    }
    const float want = std::string(op) == "GlobalMaxPool" ? best : sum / plane;
    EXPECT_NEAR((*out)[0].data[p], want, 1e-6) << op << " plane " << p;
  }
}

TEST(PoolOpTest, GlobalPools) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    CheckGlobal(op, {2, 3, 5, 4});
    CheckGlobal(op, {1, 4, 7});
    CheckGlobal(op, {2, 2, 3, 2, 4});
  }
}

absl::Status LoadAndPlan(const PoolCase& c, const Shape& x_shape,
                         const char* op = "MaxPool") {
  testing::OnnxModelBuilder b(/*opset=*/19);
  b.Input("x", x_shape).Output("y");
  AddPoolNode(b, op, c, /*indices=*/false);
  return testing::LoadAndRunOnZeros(b, x_shape);
}

TEST(PoolOpTest, BadAttributesAreRejectedAtLoad) {
  EXPECT_EQ(LoadAndPlan({.kernel = {}}, {1, 1, 4, 4}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadAndPlan({.kernel = {0, 2}}, {1, 1, 4, 4}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      LoadAndPlan({.kernel = {2, 2}, .strides = {1}}, {1, 1, 4, 4}).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadAndPlan({.kernel = {2, 2}, .pads = {1, -1, 0, 0}}, {1, 1, 4, 4})
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      LoadAndPlan({.kernel = {2, 2}, .auto_pad = "SAME"}, {1, 1, 4, 4}).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      LoadAndPlan({.kernel = {2, 2}, .ceil_mode = 2}, {1, 1, 4, 4}).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadAndPlan({.kernel = {1, 1, 1, 1}}, {1, 1, 2, 2, 2, 2}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PoolOpTest, BadShapesAreRejectedWhenPlanning) {
  // Rank does not match kernel_shape.
  EXPECT_EQ(LoadAndPlan({.kernel = {2, 2}}, {1, 1, 4}).code(),
            absl::StatusCode::kInvalidArgument);
  // Window larger than the padded input.
  EXPECT_EQ(LoadAndPlan({.kernel = {5, 5}}, {1, 1, 4, 4}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
