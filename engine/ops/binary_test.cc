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

float Apply(const std::string& op, float x, float y) {
  if (op == "Add") return x + y;
  if (op == "Sub") return x - y;
  if (op == "Mul") return x * y;
  return x / y;
}

// Reference: walk the output index and clamp each operand's coordinates.
void Check(const std::string& op, const Shape& a_shape, const Shape& b_shape,
           const Shape& out_shape, bool b_is_initializer) {
  testing::OnnxModelBuilder builder;
  const auto a = testing::RandomFloats(Count(a_shape), 1);
  auto b = testing::RandomFloats(Count(b_shape), 2);
  for (float& v : b) v += (v >= 0 ? 0.5f : -0.5f);  // keep divisors away from 0
  builder.Input("a", a_shape).Output("y");
  std::vector<HostTensor> inputs = {HostTensor{a_shape, a}};
  if (b_is_initializer) {
    builder.FloatInitializer("b", b_shape, b);
  } else {
    builder.Input("b", b_shape);
    inputs.push_back(HostTensor{b_shape, b});
  }
  builder.Node(op, {"a", "b"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape, out_shape);
  const size_t rank = out_shape.size();
  for (int64_t flat = 0; flat < Count(out_shape); ++flat) {
    Shape idx(rank);
    for (int64_t d = rank - 1, rem = flat; d >= 0; --d) {
      idx[d] = rem % out_shape[d];
      rem /= out_shape[d];
    }
    auto at = [&](const std::vector<float>& v, const Shape& s) {
      int64_t f = 0;
      for (size_t d = 0; d < s.size(); ++d) {
        f = f * s[d] + (s[d] == 1 ? 0 : idx[rank - s.size() + d]);
      }
      return v[f];
    };
    ASSERT_FLOAT_EQ((*out)[0].data[flat],
                    Apply(op, at(a, a_shape), at(b, b_shape)))
        << op << " at " << flat;
  }
}

TEST(BinaryOpTest, AllOpsSameShape) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    Check(op, {2, 3}, {2, 3}, {2, 3}, false);
}

TEST(BinaryOpTest, BroadcastVariants) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    Check(op, {4, 5}, {5}, {4, 5}, true);
    Check(op, {4, 5}, {}, {4, 5}, true);
    Check(op, {3, 1}, {1, 4}, {3, 4}, false);
    Check(op, {2, 1, 3}, {4, 1}, {2, 4, 3}, false);
  }
}

// Integer reference: C truncating division, with 0 for a zero divisor.
template <typename T>
T ApplyInt(const std::string& op, T x, T y) {
  if (op == "Add") return x + y;
  if (op == "Sub") return x - y;
  if (op == "Mul") return x * y;
  return y == 0 ? 0 : x / y;
}

template <typename T>
void CheckInt(DataType dtype, int32_t onnx_type) {
  // a [2, 3] against b [3]: values small enough not to overflow, signs
  // mixed so that division's rounding toward zero shows, one zero divisor.
  const std::vector<T> a = {7, -7, 9, 100, -1, 0};
  const std::vector<T> b = {2, -2, 0};
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    testing::OnnxModelBuilder builder;
    builder.Input("a", {2, 3}, onnx_type).Input("b", {3}, onnx_type);
    builder.Output("y", {}, onnx_type);
    builder.Node(op, {"a", "b"}, {"y"});
    auto model = builder.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    auto out = testing::RunModelTyped(
        *model, {testing::MakeTyped(dtype, {2, 3}, a),
                 testing::MakeTyped(dtype, {3}, b)});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].dtype, dtype);
    ASSERT_EQ((*out)[0].shape, (Shape{2, 3}));
    const std::vector<T> y = (*out)[0].template values<T>();
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(y[i], ApplyInt<T>(op, a[i], b[i % 3])) << op << " at " << i;
    }
  }
}

TEST(BinaryOpTest, Int64) {
  CheckInt<int64_t>(DataType::kInt64, onnx::TensorProto::INT64);
}

TEST(BinaryOpTest, Int32) {
  CheckInt<int32_t>(DataType::kInt32, onnx::TensorProto::INT32);
}

TEST(BinaryOpTest, MixedTypesRejected) {
  testing::OnnxModelBuilder builder;
  builder.Input("a", {3}, onnx::TensorProto::INT64).Input("b", {3});
  builder.Output("y", {}, onnx::TensorProto::INT64);
  builder.Node("Add", {"a", "b"}, {"y"});
  auto model = builder.Load();
  // Rejected at load or at the first run, never computed.
  absl::Status status = model.status();
  if (model.ok()) {
    status = testing::RunModelTyped(
                 *model, {testing::MakeTyped(DataType::kInt64, {3},
                                             std::vector<int64_t>(3)),
                          testing::MakeTyped(DataType::kFp32, {3},
                                             std::vector<float>(3))})
                 .status();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(std::string(status.message()).find("FP32"), std::string::npos)
      << status;
}

TEST(BinaryOpTest, IncompatibleShapesRejected) {
  testing::OnnxModelBuilder builder;
  builder.Input("a", {2, 3}).Input("b", {4}).Output("y");
  builder.Node("Add", {"a", "b"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok());
  auto out =
      testing::RunModelOnce(*model, {HostTensor{{2, 3}, std::vector<float>(6)},
                                     HostTensor{{4}, std::vector<float>(4)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
