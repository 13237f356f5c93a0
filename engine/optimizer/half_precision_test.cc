// The half-precision pass (half_precision.cc) on its own: what it rewrites,
// what it leaves alone, and that the signature stays as declared. The CPU
// executor runs FP16/BF16 models end to end in cpu_executor_types_test.cc.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/optimizer/graph_editor.h"
#include "engine/optimizer/passes.h"
#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cpu/half.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;
using testing::MakeTyped;
using testing::OnnxModelBuilder;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kFloat16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kBFloat16 = onnx::TensorProto::BFLOAT16;

// A FLOAT16 initializer (raw_data) holding `values` rounded to FP16.
void HalfInitializer(OnnxModelBuilder& b, const std::string& name,
                     const Shape& dims, const std::vector<float>& values) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(kernels::FloatToHalfBits(v));
  b.RawInitializer(name, kFloat16, dims, bits.data(),
                   bits.size() * sizeof(uint16_t));
}

onnx::TensorProto HalfScalarTensor(float value) {
  onnx::TensorProto t;
  t.set_data_type(kFloat16);
  t.add_dims(1);
  t.add_int32_data(kernels::FloatToHalfBits(value));  // as exporters write it
  return t;
}

// The builder's graph after the pass alone.
onnx::GraphProto Rewritten(OnnxModelBuilder& b) {
  onnx::GraphProto graph = b.proto().graph();
  GraphEditor editor(&graph);
  absl::Status s = ComputeHalfInFloat(editor);
  EXPECT_TRUE(s.ok()) << s;
  return graph;
}

// Every element type the graph mentions anywhere the pass looks.
bool MentionsHalf(const onnx::GraphProto& graph) {
  auto half = [](int64_t t) { return t == kFloat16 || t == kBFloat16; };
  for (const auto* infos :
       {&graph.input(), &graph.output(), &graph.value_info()})
    for (const onnx::ValueInfoProto& i : *infos)
      if (half(i.type().tensor_type().elem_type())) return true;
  for (const onnx::TensorProto& t : graph.initializer())
    if (half(t.data_type())) return true;
  for (const onnx::NodeProto& n : graph.node())
    for (const onnx::AttributeProto& a : n.attribute())
      if ((a.name() == "to" && half(a.i())) || half(a.t().data_type()))
        return true;
  return false;
}

std::vector<std::string> OpTypes(const onnx::GraphProto& graph) {
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : graph.node()) ops.push_back(n.op_type());
  return ops;
}

int64_t CastTo(const onnx::NodeProto& node) {
  const onnx::AttributeProto* to = FindAttr(node, "to");
  return to == nullptr ? -1 : to->i();
}

TEST(HalfPrecisionTest, Fp32ModelIsLeftExactlyAsItIs) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 4}).Output("y", {-1, 3}).Output("n", {}, 7);
  b.FloatInitializer("w", {4, 3}, testing::RandomFloats(12, 1));
  b.FloatInitializer("bias", {3}, {0.5f, -0.5f, 0.0f});
  b.Int64Initializer("shape", {1}, {3});
  b.Node("MatMul", {"x", "w"}, {"m"});
  b.Node("Add", {"m", "bias"}, {"a"});
  b.Node("Relu", {"a"}, {"r"});
  testing::SetIntAttr(b.Node("Softmax", {"r"}, {"y"}), "axis", -1);
  testing::SetIntAttr(b.Node("Cast", {"a"}, {"n"}), "to",
                      onnx::TensorProto::INT64);
  b.Node("ConstantOfShape", {"shape"}, {"unused"});
  onnx::ValueInfoProto* info = b.proto().mutable_graph()->add_value_info();
  info->set_name("m");
  info->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  const onnx::GraphProto before = b.proto().graph();
  EXPECT_EQ(Rewritten(b).SerializeAsString(), before.SerializeAsString());
}

// A model that already computes in FP32 between half edges (Cast in, Cast
// out) is not changed at all, so it gives the same results as before.
TEST(HalfPrecisionTest, ModelCastingAtItsEdgesIsLeftAsItIs) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 4}, kFloat16).Output("y", {-1, 4}, kFloat16);
  testing::SetIntAttr(b.Node("Cast", {"x"}, {"xf"}), "to", kFloat);
  b.Node("Relu", {"xf"}, {"r"});
  testing::SetIntAttr(b.Node("Cast", {"r"}, {"y"}), "to", kFloat16);
  const onnx::GraphProto before = b.proto().graph();
  EXPECT_EQ(Rewritten(b).SerializeAsString(), before.SerializeAsString());
}

TEST(HalfPrecisionTest, CastToFloat16InsideComputesInFloat) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {4}).Output("y", {4});
  testing::SetIntAttr(b.Node("Cast", {"x"}, {"h"}, "to_half"), "to", kFloat16);
  HalfInitializer(b, "three", {}, {3.0f});
  b.Node("Mul", {"h", "three"}, {"m"}, "mul");
  testing::SetIntAttr(b.Node("Cast", {"m"}, {"y"}, "to_float"), "to", kFloat);

  const onnx::GraphProto after = Rewritten(b);
  EXPECT_FALSE(MentionsHalf(after));
  EXPECT_THAT(OpTypes(after), ElementsAre("Cast", "Mul", "Cast"));
  EXPECT_EQ(CastTo(after.node(0)), kFloat);
  ASSERT_EQ(after.initializer_size(), 1);
  EXPECT_EQ(after.initializer(0).data_type(), kFloat);

  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  // None of these is an FP16 value: rounded to FP16 first, the products
  // would differ.
  const std::vector<float> x = {0.1f, 1.0f / 3.0f, 1000.7f, -2.2f};
  auto out =
      testing::RunModelTyped(*model, {MakeTyped(DataType::kFp32, {4}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].dtype, DataType::kFp32);
  const std::vector<float> y = (*out)[0].values<float>();
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], x[i] * 3.0f) << i;
    const float through_half =
        kernels::HalfBitsToFloat(kernels::FloatToHalfBits(x[i]));
    EXPECT_NE(y[i], through_half * 3.0f) << i;
  }
}

// The signature the server sees: half inputs and outputs keep their names
// and types; Casts at the edges do the conversions.
TEST(HalfPrecisionTest, SignatureKeepsHalfInputsAndOutputs) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 3}, kFloat16)
      .Input("b", {-1, 3}, kBFloat16)
      .Output("y", {-1, 3}, kFloat16)
      .Output("z", {-1, 3}, kBFloat16);
  b.Node("Relu", {"x"}, {"y"});
  b.Node("Sigmoid", {"b"}, {"z"});

  const onnx::GraphProto after = Rewritten(b);
  ASSERT_EQ(after.input_size(), 2);
  EXPECT_EQ(after.input(0).SerializeAsString(),
            b.proto().graph().input(0).SerializeAsString());
  EXPECT_EQ(after.input(1).SerializeAsString(),
            b.proto().graph().input(1).SerializeAsString());
  ASSERT_EQ(after.output_size(), 2);
  EXPECT_EQ(after.output(0).SerializeAsString(),
            b.proto().graph().output(0).SerializeAsString());
  EXPECT_EQ(after.output(1).SerializeAsString(),
            b.proto().graph().output(1).SerializeAsString());
  ASSERT_THAT(OpTypes(after),
              ElementsAre("Cast", "Cast", "Relu", "Sigmoid", "Cast", "Cast"));
  // x -> Cast(FLOAT) -> Relu -> Cast(FLOAT16) -> y.
  EXPECT_EQ(after.node(0).input(0), "x");
  EXPECT_EQ(CastTo(after.node(0)), kFloat);
  EXPECT_EQ(after.node(2).input(0), after.node(0).output(0));
  EXPECT_EQ(after.node(4).input(0), after.node(2).output(0));
  EXPECT_EQ(after.node(4).output(0), "y");
  EXPECT_EQ(CastTo(after.node(4)), kFloat16);
  EXPECT_EQ(after.node(5).output(0), "z");
  EXPECT_EQ(CastTo(after.node(5)), kBFloat16);

  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelSignature& sig = (*model)->signature();
  ASSERT_EQ(sig.inputs.size(), 2u);
  EXPECT_EQ(sig.inputs[0].name, "x");
  EXPECT_EQ(sig.inputs[0].dtype, DataType::kFp16);
  EXPECT_EQ(sig.inputs[0].dims, (Shape{-1, 3}));
  EXPECT_EQ(sig.inputs[1].name, "b");
  EXPECT_EQ(sig.inputs[1].dtype, DataType::kBf16);
  ASSERT_EQ(sig.outputs.size(), 2u);
  EXPECT_EQ(sig.outputs[0].name, "y");
  EXPECT_EQ(sig.outputs[0].dtype, DataType::kFp16);
  EXPECT_EQ(sig.outputs[1].name, "z");
  EXPECT_EQ(sig.outputs[1].dtype, DataType::kBf16);

  const std::vector<uint16_t> x = {0xc000, 0x3c00, 0x3800};   // -2, 1, 0.5
  const std::vector<uint16_t> bf = {0x0000, 0x3f80, 0xbf80};  // 0, 1, -1
  auto out =
      testing::RunModelTyped(*model, {MakeTyped(DataType::kFp16, {1, 3}, x),
                                      MakeTyped(DataType::kBf16, {1, 3}, bf)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype, DataType::kFp16);
  EXPECT_EQ((*out)[0].values<uint16_t>(),
            (std::vector<uint16_t>{0x0000, 0x3c00, 0x3800}));
  EXPECT_EQ((*out)[1].dtype, DataType::kBf16);
  // sigmoid(0, 1, -1) = 0.5, 0.7310586, 0.2689414, rounded to BF16.
  EXPECT_EQ((*out)[1].values<uint16_t>(),
            (std::vector<uint16_t>{0x3f00, 0x3f3b, 0x3e8a}));
}

// An output that nodes also read, a Constant, a ConstantOfShape value and a
// value_info annotation, all FP16.
TEST(HalfPrecisionTest, OutputsReadInsideAndTensorAttributes) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2}, kFloat16)
      .Output("a", {2}, kFloat16)
      .Output("c", {2}, kFloat16);
  b.Int64Initializer("shape", {1}, {2});
  auto& constant = b.Node("Constant", {}, {"k"});
  onnx::AttributeProto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = HalfScalarTensor(2.0f);
  auto& fill = b.Node("ConstantOfShape", {"shape"}, {"f"});
  value = fill.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = HalfScalarTensor(0.25f);
  b.Node("Mul", {"x", "k"}, {"a"});  // a = 2x, an output
  b.Node("Add", {"a", "f"}, {"c"});  // c = a + 0.25 reads it
  onnx::ValueInfoProto* info = b.proto().mutable_graph()->add_value_info();
  info->set_name("f");
  info->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat16);

  const onnx::GraphProto after = Rewritten(b);
  EXPECT_EQ(after.value_info(0).type().tensor_type().elem_type(), kFloat);
  EXPECT_EQ(after.node(1).attribute(0).t().data_type(), kFloat);  // Constant
  EXPECT_EQ(after.node(2).attribute(0).t().data_type(), kFloat);
  // The Add reads the FP32 value the Mul now writes, not the FP16 output.
  EXPECT_EQ(after.node(4).input(0), after.node(3).output(0));
  EXPECT_NE(after.node(3).output(0), "a");

  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<uint16_t> x = {0x3c00, 0xbe00};  // 1, -1.5
  auto out =
      testing::RunModelTyped(*model, {MakeTyped(DataType::kFp16, {2}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<uint16_t>(),
            (std::vector<uint16_t>{0x4000, 0xc200}));  // 2, -3
  EXPECT_EQ((*out)[1].values<uint16_t>(),
            (std::vector<uint16_t>{0x4080, 0xc180}));  // 2.25, -2.75
}

// A half initializer that is itself a graph output stays readable as the
// declared type.
TEST(HalfPrecisionTest, InitializerOutputKeepsItsType) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2}, kFloat16)
      .Output("w", {2}, kFloat16)
      .Output("y", {2}, kFloat16);
  HalfInitializer(b, "w", {2}, {0.5f, -4.0f});
  b.Node("Add", {"x", "w"}, {"y"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<uint16_t> x = {0x3c00, 0x3c00};  // 1, 1
  auto out =
      testing::RunModelTyped(*model, {MakeTyped(DataType::kFp16, {2}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype, DataType::kFp16);
  EXPECT_EQ((*out)[0].values<uint16_t>(),
            (std::vector<uint16_t>{0x3800, 0xc400}));  // 0.5, -4
  EXPECT_EQ((*out)[1].values<uint16_t>(),
            (std::vector<uint16_t>{0x3e00, 0xc200}));  // 1.5, -3
}

TEST(HalfPrecisionTest, UnreadableHalfInitializerIsInvalidArgument) {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2}, kFloat16).Output("y", {2}, kFloat16);
  const uint16_t one = 0x3c00;
  b.RawInitializer("w", kFloat16, {2}, &one, sizeof(one));  // 1 of 2 values
  b.Node("Add", {"x", "w"}, {"y"});
  auto model = b.Load();
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::HasSubstr("tensor 'w'"));
}

}  // namespace
}  // namespace coalesce
