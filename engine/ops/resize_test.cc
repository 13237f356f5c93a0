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

struct ResizeCase {
  std::string mode = "nearest";
  std::string coordinate = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  float extrapolation = 0.0f;
  std::vector<float> scales = {};   // per listed axis; empty: sizes given
  std::vector<int64_t> sizes = {};  // per listed axis
  std::vector<float> roi = {};      // [starts..., ends...] of the listed axes
  std::vector<int64_t> axes = {};   // empty: every axis
  std::string policy = "stretch";
};

// Per axis of the tensor: in, out, the scale the coordinate map divides by,
// and the roi.
struct AxisSpec {
  int64_t in = 1, out = 1;
  double scale = 1.0, roi_start = 0.0, roi_end = 1.0;
};

// Output sizes and scales from the Resize spec text.
std::vector<AxisSpec> SpecAxes(const ResizeCase& c, const Shape& x) {
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> listed = c.axes;
  for (int64_t& a : listed) a = a < 0 ? a + rank : a;
  if (listed.empty())
    for (int64_t a = 0; a < rank; ++a) listed.push_back(a);
  std::vector<AxisSpec> axes(rank);
  for (int64_t a = 0; a < rank; ++a) axes[a].in = axes[a].out = x[a];
  double lo = 1e30, hi = 0;
  for (size_t i = 0; i < listed.size(); ++i) {
    AxisSpec& a = axes[listed[i]];
    if (!c.scales.empty()) {
      a.scale = c.scales[i];
      a.out = static_cast<int64_t>(std::floor(a.in * a.scale));
    } else {
      a.out = c.sizes[i];
      a.scale = double(a.out) / a.in;
      lo = std::min(lo, a.scale);
      hi = std::max(hi, a.scale);
    }
    if (!c.roi.empty()) {
      a.roi_start = c.roi[i];
      a.roi_end = c.roi[i + listed.size()];
    }
  }
  if (c.scales.empty() && c.policy != "stretch") {
    for (int64_t d : listed) {
      axes[d].scale = c.policy == "not_larger" ? lo : hi;
      axes[d].out =
          static_cast<int64_t>(std::floor(axes[d].scale * x[d] + 0.5));
    }
  }
  return axes;
}

// x_original for output coordinate y, per coordinate_transformation_mode.
double SourceX(const ResizeCase& c, const AxisSpec& a, double y) {
  const double length = a.scale * a.in;  // may be fractional
  if (c.coordinate == "half_pixel") return (y + 0.5) / a.scale - 0.5;
  if (c.coordinate == "half_pixel_symmetric") {
    const double offset = a.in / 2.0 * (1 - a.out / length);
    return offset + (y + 0.5) / a.scale - 0.5;
  }
  if (c.coordinate == "pytorch_half_pixel")
    return a.out > 1 ? (y + 0.5) / a.scale - 0.5 : 0;
  if (c.coordinate == "align_corners")
    return length == 1 ? 0 : y * (a.in - 1) / (length - 1);
  if (c.coordinate == "asymmetric") return y / a.scale;
  // tf_crop_and_resize
  if (a.out == 1) return 0.5 * (a.roi_start + a.roi_end) * (a.in - 1);
  return a.roi_start * (a.in - 1) +
         y * (a.roi_end - a.roi_start) * (a.in - 1) / (a.out - 1);
}

int64_t NearestOf(const std::string& rule, double x) {
  const double f = std::floor(x), frac = x - f;
  if (frac == 0) return static_cast<int64_t>(f);
  if (rule == "floor") return f;
  if (rule == "ceil") return f + 1;
  if (rule == "round_prefer_ceil") return frac >= 0.5 ? f + 1 : f;
  return frac > 0.5 ? f + 1 : f;  // round_prefer_floor
}

double Kernel(const ResizeCase& c, double t) {
  t = std::abs(t);
  const double a = c.cubic_a;
  if (c.mode == "linear") return std::max(0.0, 1 - t);
  if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
  if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
  return 0;
}

// Weights of every input index (edge-clamped) near x along one axis; the
// filter is stretched by 1 / scale when antialiasing a downscale.
std::vector<std::pair<int64_t, double>> Weights(const ResizeCase& c,
                                                const AxisSpec& a, double x) {
  if (c.mode == "nearest") {
    const int64_t i = NearestOf(c.nearest, x);
    return {{std::clamp<int64_t>(i, 0, a.in - 1), 1.0}};
  }
  const double s = c.antialias ? std::min(a.scale, 1.0) : 1.0;
  const double support = (c.mode == "linear" ? 1.0 : 2.0) / s;
  std::vector<std::pair<int64_t, double>> w;
  double sum = 0;
  for (int64_t i = std::floor(x - support); i <= std::ceil(x + support); ++i) {
    double k = Kernel(c, (i - x) * s);
    if (c.exclude_outside && (i < 0 || i >= a.in)) k = 0;
    w.push_back({std::clamp<int64_t>(i, 0, a.in - 1), k});
    sum += k;
  }
  if (c.antialias || c.exclude_outside)
    for (auto& [i, k] : w) k /= sum;
  return w;
}

// Value at output coordinates `o`, interpolating axis `axis` and, below it,
// the later axes recursively with input indices `at` fixed so far.
double Interpolate(const ResizeCase& c, const std::vector<AxisSpec>& axes,
                   const std::vector<float>& x, const std::vector<int64_t>& o,
                   std::vector<int64_t>& at, size_t axis) {
  if (axis == axes.size()) {
    int64_t flat = 0;
    for (size_t a = 0; a < axes.size(); ++a) flat = flat * axes[a].in + at[a];
    return x[flat];
  }
  const bool identity = axes[axis].in == axes[axis].out &&
                        axes[axis].scale == 1.0 &&
                        c.coordinate != "tf_crop_and_resize";
  if (identity) {
    at[axis] = o[axis];
    return Interpolate(c, axes, x, o, at, axis + 1);
  }
  const double sx = SourceX(c, axes[axis], o[axis]);
  double v = 0;
  for (const auto& [i, w] : Weights(c, axes[axis], sx)) {
    at[axis] = i;
    if (w != 0) v += w * Interpolate(c, axes, x, o, at, axis + 1);
  }
  return v;
}

std::vector<float> NaiveResize(const ResizeCase& c, const Shape& x_shape,
                               const std::vector<float>& x, Shape* shape) {
  const std::vector<AxisSpec> axes = SpecAxes(c, x_shape);
  int64_t count = 1;
  shape->clear();
  for (const AxisSpec& a : axes) shape->push_back(a.out), count *= a.out;
  std::vector<float> y = {};
  std::vector<int64_t> o(axes.size()), at(axes.size());
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat;
    bool outside = false;
    for (size_t a = axes.size(); a-- > 0;) {
      o[a] = rest % axes[a].out;
      rest /= axes[a].out;
      const double sx = SourceX(c, axes[a], o[a]);
      outside |= c.coordinate == "tf_crop_and_resize" &&
                 (sx < 0 || sx > axes[a].in - 1);
    }
    y.push_back(outside
                    ? c.extrapolation
                    : static_cast<float>(Interpolate(c, axes, x, o, at, 0)));
  }
  return y;
}

// A Resize-`opset` model with the case's inputs as initializers.
testing::OnnxModelBuilder ResizeModel(const ResizeCase& c, const Shape& x_shape,
                                      int64_t opset) {
  testing::OnnxModelBuilder b(opset);
  b.Input("x", x_shape).Output("y");
  std::vector<std::string> inputs = {"x", "", "", ""};
  if (!c.roi.empty()) {
    b.FloatInitializer("roi", {int64_t(c.roi.size())}, c.roi);
    inputs[1] = "roi";
  }
  if (!c.scales.empty()) {
    b.FloatInitializer("scales", {int64_t(c.scales.size())}, c.scales);
    inputs[2] = "scales";
  } else {
    b.Int64Initializer("sizes", {int64_t(c.sizes.size())}, c.sizes);
    inputs[3] = "sizes";
  }
  if (inputs[3].empty()) inputs.pop_back();
  auto& node = b.Node("Resize", inputs, {"y"});
  testing::SetStringAttr(node, "mode", c.mode);
  testing::SetStringAttr(node, "coordinate_transformation_mode", c.coordinate);
  testing::SetStringAttr(node, "nearest_mode", c.nearest);
  testing::SetStringAttr(node, "keep_aspect_ratio_policy", c.policy);
  testing::SetFloatAttr(node, "cubic_coeff_a", c.cubic_a);
  testing::SetIntAttr(node, "exclude_outside", c.exclude_outside);
  testing::SetIntAttr(node, "antialias", c.antialias);
  testing::SetFloatAttr(node, "extrapolation_value", c.extrapolation);
  if (!c.axes.empty()) testing::SetIntsAttr(node, "axes", c.axes);
  return b;
}

void CheckResize(const ResizeCase& c, const Shape& x_shape,
                 int64_t opset = 19) {
  auto model = ResizeModel(c, x_shape, opset).Load();
  ASSERT_TRUE(model.ok()) << model.status();
  int64_t count = 1;
  for (int64_t d : x_shape) count *= d;
  const std::vector<float> x = testing::RandomFloats(count, /*seed=*/9);
  auto out = testing::RunModelOnce(*model, {HostTensor{x_shape, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  Shape want_shape;
  const std::vector<float> want = NaiveResize(c, x_shape, x, &want_shape);
  ASSERT_EQ((*out)[0].shape, want_shape);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR((*out)[0].data[i], want[i], 1e-5) << "at " << i;
}

const char* const kCoordinateModes[] = {"half_pixel", "half_pixel_symmetric",
                                        "pytorch_half_pixel", "align_corners",
                                        "asymmetric"};

TEST(ResizeOpTest, LinearEveryCoordinateModeUpAndDown) {
  for (const char* coordinate : kCoordinateModes) {
    SCOPED_TRACE(coordinate);
    ResizeCase c{.mode = "linear", .coordinate = coordinate};
    c.scales = {1, 1, 2.0f, 1.5f};
    CheckResize(c, {1, 2, 4, 5});
    c.scales = {1, 1, 0.6f, 0.7f};
    CheckResize(c, {2, 1, 5, 7});
    c.scales = {};
    c.sizes = {1, 2, 7, 3};
    CheckResize(c, {1, 2, 4, 5});
    c.sizes = {1, 1, 1, 9};  // an output axis of length 1
    CheckResize(c, {1, 1, 4, 4});
  }
}

TEST(ResizeOpTest, NearestEveryRoundingAndCoordinateMode) {
  for (const char* rule :
       {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    for (const char* coordinate : kCoordinateModes) {
      SCOPED_TRACE(std::string(rule) + " " + coordinate);
      ResizeCase c{.coordinate = coordinate, .nearest = rule};
      c.sizes = {1, 1, 8, 5};
      CheckResize(c, {1, 1, 4, 4});
      c.sizes = {1, 2, 3, 2};
      CheckResize(c, {1, 2, 7, 5});
    }
  }
}

TEST(ResizeOpTest, TrilinearAndOneDimensional) {
  ResizeCase c{.mode = "linear"};
  c.scales = {1, 1, 2, 0.5f, 1.5f};
  CheckResize(c, {1, 2, 3, 4, 4});
  c.scales = {1, 2.5f};
  CheckResize(c, {3, 4});
}

TEST(ResizeOpTest, CubicWithCoefficientAndExcludeOutside) {
  for (const char* coordinate : kCoordinateModes) {
    SCOPED_TRACE(coordinate);
    ResizeCase c{.mode = "cubic", .coordinate = coordinate};
    c.scales = {1, 1, 2, 1.7f};
    CheckResize(c, {1, 1, 4, 5});
    c.cubic_a = -0.5;
    c.exclude_outside = true;
    c.scales = {1, 1, 0.8f, 0.6f};
    CheckResize(c, {1, 2, 5, 6});
  }
}

TEST(ResizeOpTest, AntialiasDownscale) {
  for (const char* mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    ResizeCase c{.mode = mode, .antialias = true};
    c.scales = {1, 1, 0.6f, 0.3f};
    CheckResize(c, {1, 1, 5, 13});
    c.scales = {};
    c.sizes = {1, 1, 3, 9};  // down on one axis, up on the other
    CheckResize(c, {1, 1, 7, 4});
  }
}

TEST(ResizeOpTest, TfCropAndResizeWithExtrapolation) {
  for (const char* mode : {"linear", "nearest"}) {
    SCOPED_TRACE(mode);
    ResizeCase c{.mode = mode,
                 .coordinate = "tf_crop_and_resize",
                 .extrapolation = 10.0f};
    c.sizes = {1, 1, 3, 3};
    c.roi = {0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f};
    CheckResize(c, {1, 1, 4, 4});
    c.roi = {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f};  // partly outside
    CheckResize(c, {1, 1, 4, 4});
    c.sizes = {1, 1, 1, 4};
    CheckResize(c, {1, 1, 4, 4});
  }
}

TEST(ResizeOpTest, AxesAndKeepAspectRatio) {
  ResizeCase c{.mode = "linear"};
  c.axes = {3, 2};
  c.scales = {3.0f, 2.0f};
  CheckResize(c, {1, 1, 2, 2});
  c.scales = {};
  c.sizes = {8, 7};
  CheckResize(c, {1, 1, 2, 2});
  c.axes = {-2, -1};
  for (const char* policy : {"stretch", "not_larger", "not_smaller"}) {
    SCOPED_TRACE(policy);
    c.policy = policy;
    c.sizes = {7, 8};
    CheckResize(c, {1, 2, 2, 3});
    c.sizes = {1, 3};
    CheckResize(c, {1, 1, 2, 4});
  }
  ResizeCase crop{.mode = "linear", .coordinate = "tf_crop_and_resize"};
  crop.axes = {2, 3};
  crop.sizes = {3, 3};
  crop.roi = {0.4f, 0.6f, 0.6f, 0.8f};
  CheckResize(crop, {1, 1, 4, 4});
}

TEST(ResizeOpTest, LargeInputRunsInParallel) {
  ResizeCase c{.mode = "linear"};
  c.scales = {1, 1, 2, 2};
  CheckResize(c, {2, 8, 32, 32});
  c.mode = "nearest";
  CheckResize(c, {2, 8, 32, 32});
}

// Opset 11 lists roi and scales even when sizes is given (both may be empty
// tensors); opset 13 may leave them out.
TEST(ResizeOpTest, Opset11EmptyRoiAndScalesWithSizes) {
  testing::OnnxModelBuilder b(/*opset=*/11);
  b.Input("x", {1, 1, 2, 2}).Output("y");
  b.FloatInitializer("roi", {0}, {}).FloatInitializer("scales", {0}, {});
  b.Int64Initializer("sizes", {4}, {1, 1, 4, 4});
  auto& node = b.Node("Resize", {"x", "roi", "scales", "sizes"}, {"y"});
  testing::SetStringAttr(node, "coordinate_transformation_mode", "asymmetric");
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out =
      testing::RunModelOnce(*model, {HostTensor{{1, 1, 2, 2}, {1, 2, 3, 4}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{1, 1, 4, 4}));
  EXPECT_EQ((*out)[0].data, (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4,
                                                4, 3, 3, 4, 4}));
}

// Resize-10 and Upsample map asymmetrically and floor to the nearest.
void CheckLegacy(const std::string& op, int64_t opset,
                 const std::string& mode) {
  testing::OnnxModelBuilder b(opset);
  b.Input("x", {1, 1, 2, 3}).Output("y");
  const std::vector<float> scales = {1, 1, 2.0f, 1.5f};
  std::vector<std::string> inputs = {"x"};
  if (opset >= 9) {
    b.FloatInitializer("scales", {4}, scales);
    inputs.push_back("scales");
  }
  auto& node = b.Node(op, inputs, {"y"});
  testing::SetStringAttr(node, "mode", mode);
  if (opset < 9) {
    auto* attr = node.add_attribute();
    attr->set_name("scales");
    attr->set_type(onnx::AttributeProto::FLOATS);
    for (float s : scales) attr->add_floats(s);
  }
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto out = testing::RunModelOnce(*model, {HostTensor{{1, 1, 2, 3}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ResizeCase c{.mode = mode == "bilinear" ? "linear" : mode,
               .coordinate = "asymmetric",
               .nearest = "floor"};
  c.scales = scales;
  Shape want_shape;
  const auto want = NaiveResize(c, {1, 1, 2, 3}, x, &want_shape);
  EXPECT_EQ((*out)[0].shape, want_shape);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR((*out)[0].data[i], want[i], 1e-6) << op << opset << " " << i;
}

TEST(ResizeOpTest, Resize10AndUpsample) {
  for (const char* mode : {"nearest", "linear"}) {
    CheckLegacy("Resize", 10, mode);
    CheckLegacy("Upsample", 9, mode);
    CheckLegacy("Upsample", 7, mode);
  }
  CheckLegacy("Upsample", 7, "bilinear");
}

TEST(ResizeOpTest, BadAttributesAreRejectedAtLoad) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{
           {"mode", "area"},
           {"coordinate_transformation_mode", "center"},
           {"nearest_mode", "round"},
           {"keep_aspect_ratio_policy", "fit"}}) {
    ResizeCase c;
    c.scales = {1, 1, 2, 2};
    testing::OnnxModelBuilder b = ResizeModel(c, {1, 1, 2, 2}, 19);
    auto* node = b.proto().mutable_graph()->mutable_node(0);
    for (auto& attr : *node->mutable_attribute())
      if (attr.name() == name) attr.set_s(value);
    EXPECT_EQ(b.Load().status().code(), absl::StatusCode::kInvalidArgument)
        << name;
  }
}

TEST(ResizeOpTest, BadInputsAreRejectedWhenPlanning) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  ResizeCase c;
  c.scales = {1, 2, 2};  // rank 4 input
  testing::OnnxModelBuilder wrong_length = ResizeModel(c, {1, 1, 2, 2}, 19);
  EXPECT_EQ(testing::LoadAndRunOnZeros(wrong_length, {1, 1, 2, 2}).code(),
            kInvalid);

  c.scales = {1, 1, 0, 2};
  testing::OnnxModelBuilder zero = ResizeModel(c, {1, 1, 2, 2}, 19);
  EXPECT_EQ(testing::LoadAndRunOnZeros(zero, {1, 1, 2, 2}).code(), kInvalid);

  // A scale whose result int64 cannot hold (the fuzzer's 1e37), and infinity.
  for (float huge : {1e37f, std::numeric_limits<float>::infinity()}) {
    c.scales = {1, 1, 2, huge};
    testing::OnnxModelBuilder b = ResizeModel(c, {1, 1, 2, 2}, 19);
    EXPECT_EQ(testing::LoadAndRunOnZeros(b, {1, 1, 2, 2}).code(), kInvalid)
        << huge;
  }

  testing::OnnxModelBuilder both(/*opset=*/13);
  both.Input("x", {1, 1, 2, 2}).Output("y");
  both.FloatInitializer("scales", {4}, {1, 1, 2, 2});
  both.Int64Initializer("sizes", {4}, {1, 1, 4, 4});
  both.Node("Resize", {"x", "", "scales", "sizes"}, {"y"});
  EXPECT_EQ(testing::LoadAndRunOnZeros(both, {1, 1, 2, 2}).code(), kInvalid);

  testing::OnnxModelBuilder neither(/*opset=*/13);
  neither.Input("x", {1, 1, 2, 2}).Output("y");
  neither.Node("Resize", {"x"}, {"y"});
  EXPECT_EQ(testing::LoadAndRunOnZeros(neither, {1, 1, 2, 2}).code(), kInvalid);

  ResizeCase crop{.coordinate = "tf_crop_and_resize"};
  crop.sizes = {1, 1, 3, 3};  // no roi
  testing::OnnxModelBuilder no_roi = ResizeModel(crop, {1, 1, 4, 4}, 19);
  EXPECT_EQ(testing::LoadAndRunOnZeros(no_roi, {1, 1, 4, 4}).code(), kInvalid);
}

TEST(ResizeOpTest, ScalesFromAGraphInputAreRejectedNamingThem) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {1, 1, 2, 2}).Input("s", {4}).Output("y");
  b.Node("Resize", {"x", "", "s"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(
      *model,
      {HostTensor{{1, 1, 2, 2}, {1, 2, 3, 4}}, HostTensor{{4}, {1, 1, 2, 2}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("scales"), std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace coalesce
