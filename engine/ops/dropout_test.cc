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

TEST(DropoutOpTest, MaskOutputRejectedAtLoad) {
  for (int64_t opset : {10, 13}) {
    testing::OnnxModelBuilder builder(opset);
    builder.Input("x", {2, 3}).Output("y");
    builder.Node("Dropout", {"x"}, {"y", "mask"});
    auto model = builder.Load();
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find("mask"), std::string::npos)
        << model.status();
  }
}

}  // namespace
}  // namespace coalesce
