#include <string>
#include <vector>

#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;

void AddBoolScalar(testing::OnnxModelBuilder& builder, const std::string& name,
                   bool value) {
  onnx::TensorProto* t = builder.proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(value ? 1 : 0);
}

void ExpectIdentity(const testing::OnnxModelBuilder& builder) {
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  const auto x = testing::RandomFloats(6, 3);
  auto out = testing::RunModelOnce(*model, {HostTensor{{2, 3}, x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape, (Shape{2, 3}));
  EXPECT_EQ((*out)[0].data, x);
}

TEST(DropoutOpTest, RatioAttributeBeforeOpset12IsIdentity) {
  for (int64_t opset : {7, 10}) {
    testing::OnnxModelBuilder builder(opset);
    builder.Input("x", {2, 3}).Output("y");
    testing::SetFloatAttr(builder.Node("Dropout", {"x"}, {"y"}), "ratio", 0.5f);
    ExpectIdentity(builder);
  }
}

TEST(DropoutOpTest, RatioAndTrainingModeFalseInputsAreIdentity) {
  for (int64_t opset : {12, 13, 21}) {
    testing::OnnxModelBuilder builder(opset);
    builder.Input("x", {2, 3}).Output("y");
    builder.FloatInitializer("ratio", {}, {0.3f});
    AddBoolScalar(builder, "training", false);
    builder.Node("Dropout", {"x", "ratio", "training"}, {"y"});
    ExpectIdentity(builder);
  }
  testing::OnnxModelBuilder builder(13);
  builder.Input("x", {2, 3}).Output("y");
  builder.Node("Dropout", {"x"}, {"y", ""});  // mask left out
  ExpectIdentity(builder);
}

TEST(DropoutOpTest, TrainingModeTrueRejected) {
  testing::OnnxModelBuilder builder(13);
  builder.Input("x", {2, 3}).Output("y");
  AddBoolScalar(builder, "training", true);
  builder.Node("Dropout", {"x", "", "training"}, {"y"});
  auto model = builder.Load();
  ASSERT_TRUE(model.ok()) << model.status();
  auto out = testing::RunModelOnce(*model,
                                   {HostTensor{{2, 3}, std::vector<float>(6)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("training_mode"), std::string::npos)
      << out.status();
}

// At inference nothing is dropped: the mask is all true (opset >= 10, BOOL)
// or all 1.0 (before, the input's type).
TEST(DropoutOpTest, MaskOutputIsAllOnes) {
  for (int64_t opset : {9, 13}) {
    testing::OnnxModelBuilder builder(opset);
    const int32_t mask_type =
        opset >= 10 ? onnx::TensorProto::BOOL : onnx::TensorProto::FLOAT;
    builder.Input("x", {2, 3}).Output("y").Output("mask", {2, 3}, mask_type);
    builder.Node("Dropout", {"x"}, {"y", "mask"});
    auto model = builder.Load();
    ASSERT_TRUE(model.ok()) << model.status();
    const std::vector<float> x = {1, -2, 3, -4, 5, -6};
    auto out = testing::RunModelTyped(
        *model, {testing::MakeTyped(DataType::kFp32, {2, 3}, x)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].values<float>(), x);
    if (opset >= 10) {
      EXPECT_EQ((*out)[1].dtype, DataType::kBool);
      EXPECT_EQ((*out)[1].values<uint8_t>(), std::vector<uint8_t>(6, 1));
    } else {
      EXPECT_EQ((*out)[1].values<float>(), std::vector<float>(6, 1.0f));
    }
  }
}

}  // namespace
}  // namespace coalesce
