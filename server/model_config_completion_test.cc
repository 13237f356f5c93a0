#include "server/model_config_completion.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

ModelSignature BatchedSignature() {
  return ModelSignature{
      {{"x", DataType::kFp32, {-1, 4}}, {"y", DataType::kInt64, {-1, 2, 3}}},
      {{"out", DataType::kFp32, {-1, 10}}}};
}

inference::ModelConfig Config(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config));
  config.set_name("m");
  return config;
}

TEST(ModelConfigCompletionTest, EmptyConfigOfBatchedModelBatches) {
  inference::ModelConfig config = Config("");
  ASSERT_TRUE(CompleteModelConfig(BatchedSignature(), &config).ok());
  EXPECT_EQ(config.max_batch_size(), kAutoMaxBatchSize);
  EXPECT_TRUE(config.has_dynamic_batching());
  ASSERT_EQ(config.input_size(), 2);
  EXPECT_EQ(config.input(1).name(), "y");
  EXPECT_EQ(config.input(1).data_type(), inference::TYPE_INT64);
  ASSERT_EQ(config.input(1).dims_size(), 2);  // batch dimension dropped
  EXPECT_EQ(config.input(1).dims(0), 2);
  EXPECT_EQ(config.output(0).dims(0), 10);
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).kind(),
            inference::ModelInstanceGroup::KIND_CPU);
  EXPECT_EQ(config.instance_group(0).count(), 1);
  EXPECT_EQ(config.platform(), "onnxruntime_onnx");
}

TEST(ModelConfigCompletionTest, ImpossibleDimsAreRefusedNamingTheTensor) {
  inference::ModelConfig config = Config(
      "max_batch_size: 4 input [ { name: \"x\", data_type: TYPE_FP32, dims: "
      "[ 1099511627776 ] } ] output [ { name: \"out\", data_type: TYPE_FP32, "
      "dims: [ 10 ] } ]");
  const int64_t memory = int64_t{64} << 30;  // 64 GiB
  absl::Status s = CheckTensorSizes(config, memory);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input 'x': dims [1099511627776] need more than"),
            std::string::npos)
      << s;
  // Overflowing products are caught before they overflow.
  config.mutable_input(0)->set_dims(0, int64_t{1} << 40);
  config.mutable_input(0)->add_dims(int64_t{1} << 40);
  EXPECT_FALSE(CheckTensorSizes(config, memory).ok());
  config.mutable_input(0)->clear_dims();
  config.mutable_input(0)->add_dims(-1);
  config.mutable_input(0)->add_dims(1 << 20);
  EXPECT_TRUE(CheckTensorSizes(config, memory).ok());
}

TEST(ModelConfigCompletionTest, FixedFirstDimensionDoesNotBatch) {
  ModelSignature signature{{{"x", DataType::kFp32, {3, 4}}},
                           {{"out", DataType::kFp32, {3}}}};
  inference::ModelConfig config = Config("");
  ASSERT_TRUE(CompleteModelConfig(signature, &config).ok());
  EXPECT_EQ(config.max_batch_size(), 0);
  EXPECT_FALSE(config.has_dynamic_batching());
  EXPECT_EQ(config.input(0).dims_size(), 2);
}

TEST(ModelConfigCompletionTest, PartialConfigIsCompleted) {
  inference::ModelConfig config =
      Config("max_batch_size: 8 input [ { name: \"x\" } ]");
  ASSERT_TRUE(CompleteModelConfig(BatchedSignature(), &config).ok());
  EXPECT_EQ(config.input_size(), 2);
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(config.output_size(), 1);
  EXPECT_FALSE(config.has_dynamic_batching());  // not asked for
}

TEST(ModelConfigCompletionTest, MismatchesNameTheTensor) {
  struct Case {
    const char* config;
    const char* expected;
  };
  const Case cases[] = {
      {"max_batch_size: 8 input [ { name: \"z\" } ]", "'z'"},
      {"max_batch_size: 8 input [ { name: \"x\" data_type: TYPE_INT32 } ]",
       "'x'"},
      {"max_batch_size: 8 input [ { name: \"x\" dims: [ 5 ] } ]", "'x'"},
      {"max_batch_size: 8 output [ { name: \"out\" dims: [ 10, 1 ] } ]",
       "'out'"},
      {"max_batch_size: 8 input [ { name: \"x\" allow_ragged_batch: true } ]",
       "'x'"},
      {"max_batch_size: 4 dynamic_batching { preferred_batch_size: 8 }",
       "preferred_batch_size"},
      {"input [ { name: \"x\" } ] dynamic_batching { }", "max_batch_size"},
      {"max_batch_size: 4 batch_input [ { target_name: \"n\" } ]",
       "batch_input"},
      {"max_batch_size: 4 model_transaction_policy { decoupled: true }",
       "decoupled"},
      {"max_batch_size: 4 dynamic_batching { priority_levels: 2 "
       "default_priority_level: 3 }",
       "default_priority_level"},
      {"max_batch_size: 4 instance_group [ { kind: KIND_MODEL } ]",
       "KIND_MODEL"},
      {"platform: \"tensorflow_savedmodel\"", "platform"},
      {"max_batch_size: 4 sequence_batching { iterative_sequence: true }",
       "iterative_sequence"},
      {"max_batch_size: 4 ensemble_scheduling { }", "ensemble scheduling"},
  };
  for (const Case& c : cases) {
    inference::ModelConfig config = Config(c.config);
    absl::Status s = CompleteModelConfig(BatchedSignature(), &config);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.config;
    EXPECT_NE(s.message().find(c.expected), std::string::npos)
        << c.config << " -> " << s;
  }
}

TEST(ModelConfigCompletionTest, BatchingNeedsVariableFirstDimension) {
  ModelSignature signature{{{"x", DataType::kFp32, {3, 4}}},
                           {{"out", DataType::kFp32, {3}}}};
  inference::ModelConfig config = Config("max_batch_size: 4");
  absl::Status s = CompleteModelConfig(signature, &config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s;
}

}  // namespace
}  // namespace coalesce
