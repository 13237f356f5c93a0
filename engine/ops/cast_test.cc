#include <cstdint>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::MakeTyped;
using testing::TypedTensor;

absl::StatusOr<TypedTensor> RunCast(const TypedTensor& x, int32_t in_type,
                                    int32_t to) {
  testing::OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", x.shape, in_type).Output("y", {}, to);
  testing::SetIntAttr(b.Node("Cast", {"x"}, {"y"}), "to", to);
  auto model = b.Load();
  if (!model.ok()) return model.status();
  auto out = testing::RunModelTyped(*model, {x});
  if (!out.ok()) return out.status();
  return (*out)[0];
}

TEST(CastOpTest, BetweenAllSupportedTypes) {
  const std::vector<float> f = {-2.5f, 0.0f, 3.9f};
  auto i64 = RunCast(MakeTyped(DataType::kFp32, {3}, f),
                     onnx::TensorProto::FLOAT, onnx::TensorProto::INT64);
  ASSERT_TRUE(i64.ok()) << i64.status();
  EXPECT_EQ(i64->dtype, DataType::kInt64);
  std::vector<int64_t> want_i64;
  for (float v : f) want_i64.push_back(static_cast<int64_t>(v));
  EXPECT_EQ(i64->values<int64_t>(), want_i64);

  auto i32 = RunCast(*i64, onnx::TensorProto::INT64, onnx::TensorProto::INT32);
  ASSERT_TRUE(i32.ok()) << i32.status();
  EXPECT_EQ(i32->values<int32_t>(), (std::vector<int32_t>{-2, 0, 3}));

  auto b = RunCast(*i32, onnx::TensorProto::INT32, onnx::TensorProto::BOOL);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->dtype, DataType::kBool);
  EXPECT_EQ(b->values<uint8_t>(), (std::vector<uint8_t>{1, 0, 1}));

  auto back = RunCast(*b, onnx::TensorProto::BOOL, onnx::TensorProto::FLOAT);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->values<float>(), (std::vector<float>{1, 0, 1}));
}

TEST(CastOpTest, UnsupportedTargetRejectedAtLoad) {
  auto r = RunCast(MakeTyped(DataType::kFp32, {1}, std::vector<float>{1}),
                   onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT);
  EXPECT_TRUE(r.ok());
  testing::OnnxModelBuilder builder(/*opset=*/13);
  builder.Input("x", {1}).Output("y");
  testing::SetIntAttr(builder.Node("Cast", {"x"}, {"y"}), "to",
                      onnx::TensorProto::COMPLEX64);
  EXPECT_EQ(builder.Load().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CastOpTest, NewNumericTypes) {
  // int8 -> float16 -> float -> uint16 -> double.
  const std::vector<int8_t> x = {-128, -3, 0, 100};
  auto h = RunCast(MakeTyped(DataType::kInt8, {4}, x), onnx::TensorProto::INT8,
                   onnx::TensorProto::FLOAT16);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->dtype, DataType::kFp16);
  EXPECT_EQ(h->values<uint16_t>(),
            (std::vector<uint16_t>{0xd800, 0xc200, 0x0000, 0x5640}));
  auto f = RunCast(*h, onnx::TensorProto::FLOAT16, onnx::TensorProto::FLOAT);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->values<float>(), (std::vector<float>{-128, -3, 0, 100}));
  auto u16 = RunCast(*f, onnx::TensorProto::FLOAT, onnx::TensorProto::UINT16);
  ASSERT_TRUE(u16.ok()) << u16.status();
  EXPECT_EQ(u16->values<uint16_t>(), (std::vector<uint16_t>{0, 0, 0, 100}));
  auto d = RunCast(MakeTyped(DataType::kUint64, {2},
                             std::vector<uint64_t>{18446744073709551615ull, 1}),
                   onnx::TensorProto::UINT64, onnx::TensorProto::DOUBLE);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->values<double>(),
            (std::vector<double>{18446744073709551616.0, 1.0}));
  // bfloat16 3.140625 and -100 -> int32 3, -100.
  auto i = RunCast(
      MakeTyped(DataType::kBf16, {2}, std::vector<uint16_t>{0x4049, 0xc2c8}),
      onnx::TensorProto::BFLOAT16, onnx::TensorProto::INT32);
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ(i->values<int32_t>(), (std::vector<int32_t>{3, -100}));
}

}  // namespace
}  // namespace coalesce
