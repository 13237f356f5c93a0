#include <limits>
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
    auto out =
        testing::RunModelTyped(*model, {testing::MakeTyped(dtype, {2, 3}, a),
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

TEST(BinaryOpTest, Int16AndInt8) {
  CheckInt<int16_t>(DataType::kInt16, onnx::TensorProto::INT16);
  CheckInt<int8_t>(DataType::kInt8, onnx::TensorProto::INT8);
}

// `op` on two 1-D inputs of one type.
template <typename T>
absl::StatusOr<std::vector<T>> RunBinary(const std::string& op, DataType dtype,
                                         int32_t onnx_type,
                                         const std::vector<T>& a,
                                         const std::vector<T>& b) {
  const Shape shape = {static_cast<int64_t>(a.size())};
  testing::OnnxModelBuilder builder;
  builder.Input("a", shape, onnx_type).Input("b", shape, onnx_type);
  builder.Output("y", {}, onnx_type);
  builder.Node(op, {"a", "b"}, {"y"});
  auto model = builder.Load();
  if (!model.ok()) return model.status();
  auto out =
      testing::RunModelTyped(*model, {testing::MakeTyped(dtype, shape, a),
                                      testing::MakeTyped(dtype, shape, b)});
  if (!out.ok()) return out.status();
  return (*out)[0].template values<T>();
}

TEST(BinaryOpTest, Uint8WrapsAndDividesByZeroToZero) {
  const std::vector<uint8_t> a = {250, 3, 16, 9}, b = {10, 5, 0, 255};
  const auto run = [&](const char* op) {
    auto y = RunBinary<uint8_t>(op, DataType::kUint8, onnx::TensorProto::UINT8,
                                a, b);
    EXPECT_TRUE(y.ok()) << op << ": " << y.status();
    return y.ok() ? *y : std::vector<uint8_t>{};
  };
  EXPECT_EQ(run("Add"), (std::vector<uint8_t>{4, 8, 16, 8}));
  EXPECT_EQ(run("Sub"), (std::vector<uint8_t>{240, 254, 16, 10}));
  EXPECT_EQ(run("Mul"), (std::vector<uint8_t>{196, 15, 0, 247}));
  EXPECT_EQ(run("Div"), (std::vector<uint8_t>{25, 0, 0, 0}));
}

TEST(BinaryOpTest, WiderUnsignedTypes) {
  auto u16 =
      RunBinary<uint16_t>("Mul", DataType::kUint16, onnx::TensorProto::UINT16,
                          {65535, 300}, {65535, 300});
  ASSERT_TRUE(u16.ok()) << u16.status();
  EXPECT_EQ(*u16, (std::vector<uint16_t>{1, 24464}));
  // A divisor with every bit set is not -1.
  auto u32 =
      RunBinary<uint32_t>("Div", DataType::kUint32, onnx::TensorProto::UINT32,
                          {4294967295u, 10}, {4294967295u, 4294967295u});
  ASSERT_TRUE(u32.ok()) << u32.status();
  EXPECT_EQ(*u32, (std::vector<uint32_t>{1, 0}));
  auto u64 = RunBinary<uint64_t>("Sub", DataType::kUint64,
                                 onnx::TensorProto::UINT64, {0, 5}, {1, 2});
  ASSERT_TRUE(u64.ok()) << u64.status();
  EXPECT_EQ(*u64, (std::vector<uint64_t>{18446744073709551615ull, 3}));
}

TEST(BinaryOpTest, Float64) {
  auto sum =
      RunBinary<double>("Add", DataType::kFp64, onnx::TensorProto::DOUBLE,
                        {0.1, 1e300}, {0.2, 1e300});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(*sum, (std::vector<double>{0.30000000000000004, 2e300}));
  auto quotient =
      RunBinary<double>("Div", DataType::kFp64, onnx::TensorProto::DOUBLE,
                        {1.0, -1.0}, {0.0, 3.0});
  ASSERT_TRUE(quotient.ok());
  EXPECT_EQ(*quotient,
            (std::vector<double>{std::numeric_limits<double>::infinity(),
                                 -1.0 / 3.0}));
}

TEST(BinaryOpTest, BoolRefusedWhenPlanningHalfComputedInFloat) {
  auto b = RunBinary<uint8_t>("Add", DataType::kBool, onnx::TensorProto::BOOL,
                              {1}, {0});
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(b.status().message()).find("BOOL"), std::string::npos)
      << b.status();
  EXPECT_NE(std::string(b.status().message()).find("node 'Add_0'"),
            std::string::npos)
      << b.status();
  // FP16 loads as an FP32 graph with Casts at its edges
  // (engine/optimizer/half_precision.cc): 1.5 * -2 = -3.
  auto h = RunBinary<uint16_t>("Mul", DataType::kFp16,
                               onnx::TensorProto::FLOAT16, {0x3e00}, {0xc000});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, (std::vector<uint16_t>{0xc200}));
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
    status =
        testing::RunModelTyped(
            *model,
            {testing::MakeTyped(DataType::kInt64, {3}, std::vector<int64_t>(3)),
             testing::MakeTyped(DataType::kFp32, {3}, std::vector<float>(3))})
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
