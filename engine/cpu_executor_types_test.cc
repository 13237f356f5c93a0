// The CPU executor end to end, through the BatchSlot protocol, with the
// types beyond FP32: narrow integers, FP16/BF16, FP64 and BYTES (STRING),
// whose inputs and outputs cross the slot in KServe v2's serialized form.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/cpu_executor.h"
#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/half.h"

namespace coalesce {
namespace {

using testing::DeserializeBytes;
using ::testing::HasSubstr;
using testing::OnnxModelBuilder;
using testing::SerializeBytes;

constexpr int32_t kString = onnx::TensorProto::STRING;

template <typename T>
std::string Raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
}

template <typename T>
std::vector<T> As(const std::string& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// One model on one CPU instance, driven a batch at a time.
class Runner {
 public:
  explicit Runner(const OnnxModelBuilder& builder) {
    auto model = builder.Load();
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return;
    model_ = *model;
    auto exec = CreateCpuExecutor(model_, {});
    EXPECT_TRUE(exec.ok()) << exec.status();
    if (exec.ok()) exec_ = *std::move(exec);
  }

  // Runs one batch; inputs[i] holds input i's bytes (serialized for BYTES).
  absl::Status Run(const std::vector<Shape>& shapes,
                   const std::vector<std::string>& inputs) {
    if (exec_ == nullptr) return absl::InternalError("no executor");
    BatchSlot* slot = exec_->slot(0);
    if (absl::Status s = slot->SetInputShapes(shapes); !s.ok()) return s;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (model_->signature().inputs[i].dtype == DataType::kBytes) {
        absl::Status s =
            slot->SetInputByteSize(static_cast<int>(i), inputs[i].size());
        if (!s.ok()) return s;
      }
      if (slot->input_byte_size(i) != inputs[i].size())
        return absl::InternalError("input size mismatch in the test");
      if (!inputs[i].empty())
        std::memcpy(slot->input_data(i), inputs[i].data(), inputs[i].size());
    }
    exec_->CopyIn(slot);
    exec_->Run(slot);
    return exec_->CopyOut(slot)->Wait();
  }

  std::string Output(int index) const {
    const BatchSlot* slot = exec_->slot(0);
    return std::string(slot->output_data(index), slot->output_byte_size(index));
  }
  std::vector<std::string> Strings(int index) const {
    const std::string bytes = Output(index);
    return DeserializeBytes(bytes.data(), bytes.size());
  }
  const Shape& OutputShape(int index) const {
    return exec_->slot(0)->output_shape(index);
  }
  BatchSlot* slot() { return exec_->slot(0); }

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<ExecutorInstance> exec_;
};

TEST(CpuExecutorTypesTest, Int8AddAndSubWrap) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("a", {-1, 3}, onnx::TensorProto::INT8)
      .Input("b", {-1, 3}, onnx::TensorProto::INT8)
      .Output("sum", {-1, 3}, onnx::TensorProto::INT8)
      .Output("diff", {-1, 3}, onnx::TensorProto::INT8);
  b.Node("Add", {"a", "b"}, {"sum"});
  b.Node("Sub", {"a", "b"}, {"diff"});
  Runner r(b);
  const std::vector<int8_t> a = {127, -128, 5, 0, -1, 100};
  const std::vector<int8_t> c = {1, 1, -7, -128, -1, 100};
  ASSERT_TRUE(r.Run({{2, 3}, {2, 3}}, {Raw(a), Raw(c)}).ok());
  EXPECT_EQ(As<int8_t>(r.Output(0)),
            (std::vector<int8_t>{-128, -127, -2, -128, -2, -56}));
  EXPECT_EQ(As<int8_t>(r.Output(1)),
            (std::vector<int8_t>{126, 127, 12, -128, 0, 0}));
}

TEST(CpuExecutorTypesTest, StringIdentity) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("s", {-1}, kString).Output("t", {-1}, kString);
  b.Node("Identity", {"s"}, {"t"});
  Runner r(b);
  const std::vector<std::string> s = {"hello", "", std::string("a\0b", 3)};
  ASSERT_TRUE(r.Run({{3}}, {SerializeBytes(s)}).ok());
  EXPECT_EQ(r.OutputShape(0), (Shape{3}));
  EXPECT_EQ(r.Output(0), SerializeBytes(s));
  // A second, smaller batch on the same slot.
  const std::vector<std::string> one = {"x"};
  ASSERT_TRUE(r.Run({{1}}, {SerializeBytes(one)}).ok());
  EXPECT_EQ(r.Strings(0), one);
}

TEST(CpuExecutorTypesTest, GatherFromStringTableAndEqual) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("ids", {-1}, onnx::TensorProto::INT64)
      .Output("names", {-1}, kString)
      .Output("is_cat", {-1}, onnx::TensorProto::BOOL);
  b.StringInitializer("table", {3}, {"dog", "cat", "caterpillar"});
  b.StringInitializer("cat", {}, {"cat"});
  b.Node("Gather", {"table", "ids"}, {"names"});
  b.Node("Equal", {"names", "cat"}, {"is_cat"});
  Runner r(b);
  ASSERT_TRUE(r.Run({{4}}, {Raw(std::vector<int64_t>{1, 2, 0, 1})}).ok());
  EXPECT_EQ(r.Strings(0),
            (std::vector<std::string>{"cat", "caterpillar", "dog", "cat"}));
  EXPECT_EQ(As<uint8_t>(r.Output(1)), (std::vector<uint8_t>{1, 0, 0, 1}));
}

TEST(CpuExecutorTypesTest, CastBetweenStringAndInt32) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("s", {-1}, kString)
      .Input("i", {-1}, onnx::TensorProto::INT32)
      .Output("parsed", {-1}, onnx::TensorProto::INT32)
      .Output("text", {-1}, kString);
  testing::SetIntAttr(b.Node("Cast", {"s"}, {"parsed"}, "parse"), "to",
                      onnx::TensorProto::INT32);
  testing::SetIntAttr(b.Node("Cast", {"i"}, {"text"}, "format"), "to",
                      onnx::TensorProto::STRING);
  Runner r(b);
  const std::vector<std::string> s = {"42", "-7", "+0"};
  const std::vector<int32_t> i = {-2147483647 - 1, 0, 123};
  for (int repeat = 0; repeat < 3; ++repeat) {  // the string store is reused
    ASSERT_TRUE(r.Run({{3}, {3}}, {SerializeBytes(s), Raw(i)}).ok());
    EXPECT_EQ(As<int32_t>(r.Output(0)), (std::vector<int32_t>{42, -7, 0}));
    EXPECT_EQ(r.Strings(1),
              (std::vector<std::string>{"-2147483648", "0", "123"}));
  }
  const std::vector<std::string> bad = {"1", "one", "3"};
  absl::Status st = r.Run({{3}, {3}}, {SerializeBytes(bad), Raw(i)});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("node 'parse'"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("\"one\""));
}

TEST(CpuExecutorTypesTest, ConcatOfTwoStringInputs) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("a", {-1, 2}, kString)
      .Input("b", {-1, 1}, kString)
      .Output("c", {-1, 3}, kString);
  testing::SetIntAttr(b.Node("Concat", {"a", "b"}, {"c"}), "axis", 1);
  Runner r(b);
  const std::vector<std::string> a = {"a0", "a1", "b0", "b1"}, c = {"A", ""};
  ASSERT_TRUE(
      r.Run({{2, 2}, {2, 1}}, {SerializeBytes(a), SerializeBytes(c)}).ok());
  EXPECT_EQ(r.OutputShape(0), (Shape{2, 3}));
  EXPECT_EQ(r.Strings(0),
            (std::vector<std::string>{"a0", "a1", "A", "b0", "b1", ""}));
}

TEST(CpuExecutorTypesTest, MalformedBytesInputFailsNamingTheInput) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("words", {-1}, kString).Output("t", {-1}, kString);
  b.Node("Identity", {"words"}, {"t"});
  Runner r(b);
  const std::string two = SerializeBytes({"ab", "c"});
  std::string beyond = two;
  beyond[0] = 100;  // the first length runs past the buffer
  const std::string trailing = two + "zz";
  for (const auto& [shape, bytes] :
       std::vector<std::pair<Shape, std::string>>{{{2}, beyond},
                                                  {{3}, two},  // too few
                                                  {{2}, trailing}}) {
    absl::Status s = r.Run({shape}, {bytes});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("input 'words'"));
  }
  // The slot recovers with a good batch.
  ASSERT_TRUE(r.Run({{2}}, {two}).ok());
  EXPECT_EQ(r.Strings(0), (std::vector<std::string>{"ab", "c"}));
}

TEST(CpuExecutorTypesTest, SetInputByteSizeIsForBytesInputsOnly) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1}).Input("s", {-1}, kString);
  b.Output("y", {-1}).Output("t", {-1}, kString);
  b.Node("Identity", {"x"}, {"y"});
  b.Node("Identity", {"s"}, {"t"});
  Runner r(b);
  BatchSlot* slot = r.slot();
  EXPECT_EQ(slot->SetInputByteSize(1, 8).code(),
            absl::StatusCode::kFailedPrecondition);  // before SetInputShapes
  ASSERT_TRUE(slot->SetInputShapes({{2}, {2}}).ok());
  EXPECT_EQ(slot->input_byte_size(0), 8u);
  EXPECT_EQ(slot->input_byte_size(1), 0u);  // until SetInputByteSize
  absl::Status s = slot->SetInputByteSize(0, 8);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'x' is FP32"));
  EXPECT_EQ(slot->SetInputByteSize(2, 8).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(slot->SetInputByteSize(1, 10).ok());
  EXPECT_EQ(slot->input_byte_size(1), 10u);
}

TEST(CpuExecutorTypesTest, Fp16AndBf16CastToFloatAndBack) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("h", {-1}, onnx::TensorProto::FLOAT16)
      .Input("bf", {-1}, onnx::TensorProto::BFLOAT16)
      .Output("h_out", {-1}, onnx::TensorProto::FLOAT16)
      .Output("bf_out", {-1}, onnx::TensorProto::BFLOAT16);
  testing::SetIntAttr(b.Node("Cast", {"h"}, {"hf"}), "to",
                      onnx::TensorProto::FLOAT);
  testing::SetIntAttr(b.Node("Cast", {"bf"}, {"bff"}), "to",
                      onnx::TensorProto::FLOAT);
  b.FloatInitializer("two", {}, {2.0f});
  b.Node("Mul", {"hf", "two"}, {"h2"});
  b.Node("Mul", {"bff", "two"}, {"bf2"});
  testing::SetIntAttr(b.Node("Cast", {"h2"}, {"h_out"}), "to",
                      onnx::TensorProto::FLOAT16);
  testing::SetIntAttr(b.Node("Cast", {"bf2"}, {"bf_out"}), "to",
                      onnx::TensorProto::BFLOAT16);
  Runner r(b);
  // float16: 1, -2.5, 65504 (doubles to inf), 2^-24; bfloat16: 1, 3.140625,
  // -100, the largest finite (doubles to inf).
  const std::vector<uint16_t> h = {0x3c00, 0xc100, 0x7bff, 0x0001};
  const std::vector<uint16_t> bf = {0x3f80, 0x4049, 0xc2c8, 0x7f7f};
  ASSERT_TRUE(r.Run({{4}, {4}}, {Raw(h), Raw(bf)}).ok());
  EXPECT_EQ(As<uint16_t>(r.Output(0)),
            (std::vector<uint16_t>{0x4000, 0xc500, 0x7c00, 0x0002}));
  EXPECT_EQ(As<uint16_t>(r.Output(1)),
            (std::vector<uint16_t>{0x4000, 0x40c9, 0xc348, 0x7f80}));
}

// FP16 and BF16 models compute in FP32 (engine/optimizer/half_precision.cc).
// Values are made representable in the half type, so the FP32 reference
// below sees exactly the model's weights and inputs; the outputs then differ
// from it only by their own rounding to the half type (2^-11 relative for
// FP16, 2^-9 for BF16) and FP32 summation order.
struct HalfType {
  int32_t onnx_type;
  uint16_t (*to_bits)(float);
  float (*from_bits)(uint16_t);
};
constexpr HalfType kFp16{onnx::TensorProto::FLOAT16, kernels::FloatToHalfBits,
                         kernels::HalfBitsToFloat};
constexpr HalfType kBf16{onnx::TensorProto::BFLOAT16, kernels::FloatToBf16Bits,
                         kernels::Bf16BitsToFloat};

// `values` rounded to the half type, as bits.
std::vector<uint16_t> HalfBits(const HalfType& type,
                               const std::vector<float>& values) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(type.to_bits(v));
  return bits;
}
// The floats `bits` hold.
std::vector<float> HalfValues(const HalfType& type,
                              const std::vector<uint16_t>& bits) {
  std::vector<float> values;
  for (uint16_t b : bits) values.push_back(type.from_bits(b));
  return values;
}

void HalfInitializer(OnnxModelBuilder& b, const HalfType& type,
                     const std::string& name, const Shape& dims,
                     const std::vector<uint16_t>& bits) {
  b.RawInitializer(name, type.onnx_type, dims, bits.data(),
                   bits.size() * sizeof(uint16_t));
}

void ExpectCloseRelative(const std::vector<float>& got,
                         const std::vector<float>& want, double rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rtol * std::abs(want[i]) + 1e-5) << "at " << i;
  }
}

// FP16 [2,8] -> MatMul FP16 [8,4] -> Add FP16 [4] -> Relu -> Softmax -> FP16.
TEST(CpuExecutorTypesTest, Fp16MatMulAddReluSoftmax) {
  constexpr int kRows = 2, kIn = 8, kOut = 4;
  const std::vector<uint16_t> x =
      HalfBits(kFp16, testing::RandomFloats(kRows * kIn, 21));
  const std::vector<uint16_t> w =
      HalfBits(kFp16, testing::RandomFloats(kIn * kOut, 22));
  const std::vector<uint16_t> bias =
      HalfBits(kFp16, {0.25f, -0.5f, 0.125f, 1.0f});
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, kIn}, onnx::TensorProto::FLOAT16)
      .Output("y", {-1, kOut}, onnx::TensorProto::FLOAT16);
  HalfInitializer(b, kFp16, "w", {kIn, kOut}, w);
  HalfInitializer(b, kFp16, "bias", {kOut}, bias);
  b.Node("MatMul", {"x", "w"}, {"m"});
  b.Node("Add", {"m", "bias"}, {"a"});
  b.Node("Relu", {"a"}, {"r"});
  testing::SetIntAttr(b.Node("Softmax", {"r"}, {"y"}), "axis", -1);
  Runner r(b);
  ASSERT_TRUE(r.Run({{kRows, kIn}}, {Raw(x)}).ok());
  ASSERT_EQ(r.OutputShape(0), (Shape{kRows, kOut}));
  const std::string out = r.Output(0);
  ASSERT_EQ(out.size(), kRows * kOut * sizeof(uint16_t));  // FP16 on the wire

  const std::vector<float> xf = HalfValues(kFp16, x), wf = HalfValues(kFp16, w),
                           bf = HalfValues(kFp16, bias);
  std::vector<float> want(kRows * kOut);
  for (int i = 0; i < kRows; ++i) {
    float row[kOut], max = 0.0f, sum = 0.0f;
    for (int j = 0; j < kOut; ++j) {
      float acc = bf[j];
      for (int k = 0; k < kIn; ++k) acc += xf[i * kIn + k] * wf[k * kOut + j];
      row[j] = std::max(acc, 0.0f);
      max = std::max(max, row[j]);
    }
    for (int j = 0; j < kOut; ++j) sum += row[j] = std::exp(row[j] - max);
    for (int j = 0; j < kOut; ++j) want[i * kOut + j] = row[j] / sum;
  }
  ExpectCloseRelative(HalfValues(kFp16, As<uint16_t>(out)), want,
                      /*rtol=*/1e-3);
}

// BF16 NCHW [1,2,5,5] -> Conv 3x3 (pads 1, BF16 weights and bias) -> BF16.
TEST(CpuExecutorTypesTest, Bf16Conv) {
  constexpr int kC = 2, kM = 3, kH = 5, kW = 5, kK = 3;
  const std::vector<uint16_t> x =
      HalfBits(kBf16, testing::RandomFloats(kC * kH * kW, 31));
  const std::vector<uint16_t> w =
      HalfBits(kBf16, testing::RandomFloats(kM * kC * kK * kK, 32));
  const std::vector<uint16_t> bias = HalfBits(kBf16, {0.5f, -0.25f, 0.0f});
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, kC, kH, kW}, onnx::TensorProto::BFLOAT16)
      .Output("y", {-1, kM, kH, kW}, onnx::TensorProto::BFLOAT16);
  HalfInitializer(b, kBf16, "w", {kM, kC, kK, kK}, w);
  HalfInitializer(b, kBf16, "bias", {kM}, bias);
  testing::SetIntsAttr(b.Node("Conv", {"x", "w", "bias"}, {"y"}), "pads",
                       {1, 1, 1, 1});
  Runner r(b);
  ASSERT_TRUE(r.Run({{1, kC, kH, kW}}, {Raw(x)}).ok());
  ASSERT_EQ(r.OutputShape(0), (Shape{1, kM, kH, kW}));
  const std::string out = r.Output(0);
  ASSERT_EQ(out.size(), kM * kH * kW * sizeof(uint16_t));  // BF16 on the wire

  const std::vector<float> xf = HalfValues(kBf16, x), wf = HalfValues(kBf16, w),
                           bf = HalfValues(kBf16, bias);
  std::vector<float> want(kM * kH * kW);
  for (int m = 0; m < kM; ++m)
    for (int oh = 0; oh < kH; ++oh)
      for (int ow = 0; ow < kW; ++ow) {
        float acc = bf[m];
        for (int c = 0; c < kC; ++c)
          for (int kh = 0; kh < kK; ++kh)
            for (int kw = 0; kw < kK; ++kw) {
              const int ih = oh + kh - 1, iw = ow + kw - 1;
              if (ih < 0 || ih >= kH || iw < 0 || iw >= kW) continue;
              acc += xf[(c * kH + ih) * kW + iw] *
                     wf[((m * kC + c) * kK + kh) * kK + kw];
            }
        want[(m * kH + oh) * kW + ow] = acc;
      }
  ExpectCloseRelative(HalfValues(kBf16, As<uint16_t>(out)), want,
                      /*rtol=*/1e-2);
}

TEST(CpuExecutorTypesTest, Fp64Add) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 2}, onnx::TensorProto::DOUBLE)
      .Output("y", {-1, 2}, onnx::TensorProto::DOUBLE);
  const std::vector<double> bias = {0.2, 1e-300};
  b.RawInitializer("bias", onnx::TensorProto::DOUBLE, {2}, bias.data(),
                   bias.size() * sizeof(double));
  b.Node("Add", {"x", "bias"}, {"y"});
  Runner r(b);
  const std::vector<double> x = {0.1, 1.0, -0.2, 1e300};
  ASSERT_TRUE(r.Run({{2, 2}}, {Raw(x)}).ok());
  EXPECT_EQ(As<double>(r.Output(0)),
            (std::vector<double>{0.30000000000000004, 1.0, 0.0, 1e300}));
}

}  // namespace
}  // namespace coalesce
