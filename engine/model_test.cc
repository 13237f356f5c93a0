#include "engine/model.h"

#include <fstream>

#include "engine/testing/onnx_model_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::HasSubstr;
using testing::OnnxModelBuilder;

OnnxModelBuilder GoodModel() {
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {-1, 4}).Output("y", {-1, 3});
  b.FloatInitializer("w", {4, 3}, std::vector<float>(12, 0.5f));
  b.Node("MatMul", {"x", "w"}, {"h"});
  b.Node("Relu", {"h"}, {"y"});
  return b;
}

TEST(ModelTest, LoadsSignatureAndOpset) {
  auto model = GoodModel().Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelSignature& sig = (*model)->signature();
  ASSERT_EQ(sig.inputs.size(), 1u);
  EXPECT_EQ(sig.inputs[0].name, "x");
  EXPECT_EQ(sig.inputs[0].dtype, DataType::kFp32);
  EXPECT_EQ(sig.inputs[0].dims, (Shape{-1, 4}));
  ASSERT_EQ(sig.outputs.size(), 1u);
  EXPECT_EQ(sig.outputs[0].dims, (Shape{-1, 3}));
  EXPECT_EQ((*model)->opset_version(), 13);
}

TEST(ModelTest, InitializersListedAsInputsAreSkipped) {
  OnnxModelBuilder b = GoodModel();
  b.Input("w", {4, 3});  // IR < 4 style
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->signature().inputs.size(), 1u);
}

TEST(ModelTest, EveryUnsupportedOperatorIsNamed) {
  OnnxModelBuilder b;
  b.Input("x", {2}).Output("y");
  b.Node("NonMaxSuppression", {"x"}, {"a"}, "nms");
  b.Node("Relu", {"a"}, {"b"});
  b.Node("LSTM", {"b"}, {"y"}, "lstm");
  auto model = b.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::AllOf(HasSubstr("node 'nms' (op 'NonMaxSuppression')"),
                               HasSubstr("node 'lstm' (op 'LSTM')"),
                               ::testing::Not(HasSubstr("Relu"))));
}

TEST(ModelTest, CycleIsRejected) {
  OnnxModelBuilder b;
  b.Input("x", {2}).Output("y");
  b.Node("Add", {"x", "c"}, {"a"}, "first");
  b.Node("Relu", {"a"}, {"c"}, "second");
  b.Node("Relu", {"a"}, {"y"});
  auto model = b.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("cycle"));
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("'first'"));
}

TEST(ModelTest, UndefinedInputIsRejected) {
  OnnxModelBuilder b;
  b.Input("x", {2}).Output("y");
  b.Node("Add", {"x", "ghost"}, {"y"}, "adder");
  auto model = b.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              ::testing::AllOf(HasSubstr("'adder'"), HasSubstr("'ghost'")));
}

TEST(ModelTest, OutOfOrderNodesAreSorted) {
  OnnxModelBuilder b;
  b.Input("x", {2}).Output("y");
  b.Node("Relu", {"a"}, {"y"});
  b.Node("Relu", {"x"}, {"a"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model, {{{2}, {-1.0f, 2.0f}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data, (std::vector<float>{0.0f, 2.0f}));
}

TEST(ModelTest, TruncatedBytesAreRejected) {
  const std::string bytes = GoodModel().Serialize();
  for (size_t keep : {bytes.size() / 2, bytes.size() - 3, size_t{5}}) {
    auto model = Model::LoadFromBytes(std::string_view(bytes).substr(0, keep));
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument)
        << keep;
  }
  EXPECT_EQ(Model::LoadFromBytes("not a model at all \xff\xff").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelTest, UnknownAndUnsupportedElementTypes) {
  OnnxModelBuilder unknown;
  unknown.Input("x", {2}, /*elem_type=*/999).Output("y");
  unknown.Node("Relu", {"x"}, {"y"});
  auto model = unknown.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()),
              HasSubstr("unknown element type 999"));

  OnnxModelBuilder unsupported;
  unsupported.Input("x", {2}, onnx::TensorProto::COMPLEX64).Output("y");
  unsupported.Node("Identity", {"x"}, {"y"});
  model = unsupported.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("COMPLEX64"));
}

// Every Triton type loads as a graph input and output (Identity).
TEST(ModelTest, EveryTritonTypeInTheSignature) {
  const std::pair<int32_t, DataType> types[] = {
      {onnx::TensorProto::BOOL, DataType::kBool},
      {onnx::TensorProto::UINT8, DataType::kUint8},
      {onnx::TensorProto::UINT16, DataType::kUint16},
      {onnx::TensorProto::UINT32, DataType::kUint32},
      {onnx::TensorProto::UINT64, DataType::kUint64},
      {onnx::TensorProto::INT8, DataType::kInt8},
      {onnx::TensorProto::INT16, DataType::kInt16},
      {onnx::TensorProto::INT32, DataType::kInt32},
      {onnx::TensorProto::INT64, DataType::kInt64},
      {onnx::TensorProto::FLOAT16, DataType::kFp16},
      {onnx::TensorProto::BFLOAT16, DataType::kBf16},
      {onnx::TensorProto::FLOAT, DataType::kFp32},
      {onnx::TensorProto::DOUBLE, DataType::kFp64},
      {onnx::TensorProto::STRING, DataType::kBytes},
  };
  for (const auto& [onnx_type, dtype] : types) {
    OnnxModelBuilder b;
    b.Input("x", {-1, 2}, onnx_type).Output("y", {-1, 2}, onnx_type);
    b.Node("Identity", {"x"}, {"y"});
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << onnx_type << ": " << model.status();
    EXPECT_EQ((*model)->signature().inputs[0].dtype, dtype);
    EXPECT_EQ((*model)->signature().outputs[0].dtype, dtype);
  }
}

// Compute ops keep their types: a model using one with another type fails
// when planned, naming the node and the type, and computes nothing. (FP16
// and BF16 models are computed in FP32 instead: half_precision_test.cc.)
TEST(ModelTest, ComputeOpsRefuseOtherTypesWhenPlanning) {
  struct Case {
    const char* op;
    int32_t onnx_type;
    DataType dtype;
    const char* type_name;
  };
  for (const Case& c :
       {Case{"Relu", onnx::TensorProto::INT8, DataType::kInt8, "INT8"},
        Case{"Softmax", onnx::TensorProto::INT16, DataType::kInt16, "INT16"},
        Case{"Sqrt", onnx::TensorProto::DOUBLE, DataType::kFp64, "FP64"},
        Case{"ReduceSum", onnx::TensorProto::UINT32, DataType::kUint32,
             "UINT32"}}) {
    OnnxModelBuilder b(/*opset=*/13);
    b.Input("x", {2, 2}, c.onnx_type).Output("y", {}, c.onnx_type);
    b.Node(c.op, {"x"}, {"y"}, "the_node");
    auto model = b.Load();
    ASSERT_TRUE(model.ok()) << c.op << ": " << model.status();
    auto out = testing::RunModelTyped(
        *model,
        {testing::TypedTensor{
            c.dtype, {2, 2}, std::vector<char>(4 * ElementByteSize(c.dtype))}});
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << c.op;
    EXPECT_THAT(std::string(out.status().message()),
                HasSubstr("node 'the_node'"));
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(c.type_name));
  }
  // MatMul and Gemm too.
  OnnxModelBuilder b(/*opset=*/13);
  b.Input("x", {2, 2}, onnx::TensorProto::DOUBLE)
      .Output("y", {}, onnx::TensorProto::DOUBLE);
  b.Node("MatMul", {"x", "x"}, {"y"}, "mm");
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelTyped(
      *model,
      {testing::TypedTensor{DataType::kFp64, {2, 2}, std::vector<char>(32)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("FP64"));
}

TEST(ModelTest, BoolAndInt32InputsAndInitializers) {
  OnnxModelBuilder b;
  b.Input("flags", {-1, 2}, onnx::TensorProto::BOOL)
      .Input("ids", {3}, onnx::TensorProto::INT32)
      .Output("flags_out", {}, onnx::TensorProto::BOOL)
      .Output("ids_out", {}, onnx::TensorProto::INT32)
      .Output("c32", {}, onnx::TensorProto::INT32)
      .Output("cbool", {}, onnx::TensorProto::BOOL);
  const int32_t raw[2] = {-4, 9};
  b.RawInitializer("c32", onnx::TensorProto::INT32, {2}, raw, sizeof(raw));
  // Bools in int32_data, as exporters write them without raw_data.
  onnx::TensorProto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("cbool");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_dims(3);
  for (int v : {1, 0, 1}) t->add_int32_data(v);
  b.Node("Identity", {"flags"}, {"flags_out"});
  b.Node("Identity", {"ids"}, {"ids_out"});
  auto model = b.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->signature().inputs[0].dtype, DataType::kBool);
  EXPECT_EQ((*model)->signature().inputs[1].dtype, DataType::kInt32);
  EXPECT_EQ((*model)->signature().outputs[2].dtype, DataType::kInt32);
  auto out = testing::RunModelTyped(
      *model, {testing::MakeBool({1, 2}, {1, 0}),
               testing::MakeTyped(DataType::kInt32, {3},
                                  std::vector<int32_t>{7, 8, 9})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].values<uint8_t>(), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ((*out)[1].values<int32_t>(), (std::vector<int32_t>{7, 8, 9}));
  EXPECT_EQ((*out)[2].values<int32_t>(), (std::vector<int32_t>{-4, 9}));
  EXPECT_EQ((*out)[3].dtype, DataType::kBool);
  EXPECT_EQ((*out)[3].values<uint8_t>(), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(ModelTest, BadAttributeTypeIsRejected) {
  OnnxModelBuilder b;
  b.Input("x", {2, 2}).Output("y");
  testing::SetFloatAttr(b.Node("Gemm", {"x", "x"}, {"y"}, "g"), "transA", 1.0f);
  auto model = b.Load();
  ASSERT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("transA"));
}

TEST(ModelTest, MissingFileIsNotFound) {
  EXPECT_EQ(Model::LoadFromFile("/nonexistent/model.onnx").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ModelTest, LoadFromFileRoundTrip) {
  const std::string path = ::testing::TempDir() + "/model_test.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    out << GoodModel().Serialize();
  }
  auto model = Model::LoadFromFile(path);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->signature().inputs[0].name, "x");
}

}  // namespace
}  // namespace coalesce
