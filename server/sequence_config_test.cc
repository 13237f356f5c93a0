#include "server/sequence_config.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "server/model_config_completion.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The model of an accumulator with every control and a state.
ModelSignature Signature() {
  return ModelSignature{{{"INPUT", DataType::kInt32, {-1, 1}},
                         {"START", DataType::kInt32, {-1, 1}},
                         {"CORRID", DataType::kUint64, {-1, 1}},
                         {"ACC_IN", DataType::kFp32, {-1, 2}},
                         {"READY", DataType::kFp32, {-1, 1}}},
                        {{"ACC_OUT", DataType::kFp32, {-1, 2}},
                         {"OUTPUT", DataType::kInt32, {-1, 1}}}};
}

constexpr char kConfig[] = R"pb(
  name: "acc"
  max_batch_size: 4 instance_group
  [ { count: 2, kind: KIND_CPU }]
  sequence_batching {
    control_input
    [ {
      name: "START",
      control
      [ {
        kind: CONTROL_SEQUENCE_START,
        int32_false_true: [ 0, 1 ]
      }]
    }
      , {
        name: "READY",
        control
        [ {
          kind: CONTROL_SEQUENCE_READY,
          fp32_false_true: [ 0, 1 ]
        }]
      }
      , {
        name: "CORRID",
        control
        [ { kind: CONTROL_SEQUENCE_CORRID, data_type: TYPE_UINT64 }]
      }] state
    [ {
      input_name: "ACC_IN",
      output_name: "ACC_OUT",
      data_type: TYPE_FP32,
      dims: [ 2 ]
    }]
  }
)pb";

// kConfig with `extra` merged in (repeated fields appended).
inference::ModelConfig Config(const std::string& extra = "") {
  inference::ModelConfig config, more;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kConfig, &config));
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(extra, &more));
  config.MergeFrom(more);
  return config;
}

TEST(SequenceConfigTest, ClientTensorsExcludeControlsAndState) {
  inference::ModelConfig config = Config();
  ASSERT_TRUE(CompleteModelConfig(Signature(), &config).ok());
  ASSERT_EQ(config.input_size(), 1);
  EXPECT_EQ(config.input(0).name(), "INPUT");
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_EQ(config.output(0).name(), "OUTPUT");
}

TEST(SequenceConfigTest, OptionsFromConfig) {
  inference::ModelConfig config = Config();
  ASSERT_TRUE(CompleteModelConfig(Signature(), &config).ok());
  auto options = SequenceOptionsFromConfig(config, ".");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->strategy, SequenceOptions::Strategy::kDirect);
  EXPECT_EQ(options->max_active_sequences, 8);  // 4 rows x 2 instances
  EXPECT_EQ(options->max_sequence_idle, std::chrono::seconds(1));
  ASSERT_EQ(options->controls.size(), 3u);
  const SequenceControl& ready = options->controls[1];
  EXPECT_EQ(ready.kind, SequenceControl::Kind::kReady);
  EXPECT_EQ(ready.dtype, DataType::kFp32);
  float one;
  std::memcpy(&one, ready.true_value.data(), sizeof(one));
  EXPECT_EQ(one, 1.0f);
  EXPECT_EQ(options->controls[2].dtype, DataType::kUint64);
  ASSERT_EQ(options->states.size(), 1u);
  EXPECT_EQ(options->states[0].dims, (Shape{2}));
  EXPECT_TRUE(options->states[0].initial.empty());  // zeros

  SchedulerOptions scheduler;
  scheduler.max_batch_size = 4;
  scheduler.inputs = {{"INPUT", DataType::kInt32, {1}}};
  scheduler.outputs = {{"OUTPUT", DataType::kInt32, {1}}};
  ASSERT_TRUE(AddSequenceTensors(config, Signature(), &scheduler).ok());
  std::vector<std::string> names;
  for (const TensorSpec& spec : scheduler.inputs) names.push_back(spec.name);
  EXPECT_THAT(names,
              ElementsAre("INPUT", "START", "CORRID", "ACC_IN", "READY"));
  EXPECT_EQ(scheduler.inputs[3].dims, (Shape{2}));  // batch dim dropped
  EXPECT_EQ(scheduler.outputs[0].name, "ACC_OUT");
  EXPECT_TRUE(scheduler.dynamic_batching);
  EXPECT_TRUE(ValidateSequenceOptions(*options, scheduler).ok());
}

TEST(SequenceConfigTest, OldestUsesMaxCandidateSequences) {
  inference::ModelConfig config = Config(R"pb(
    sequence_batching {
      oldest {
        max_candidate_sequences: 3,
        preferred_batch_size: [ 2 ],
        max_queue_delay_microseconds: 500
      }
      max_sequence_idle_microseconds: 2500
    })pb");
  auto options = SequenceOptionsFromConfig(config, ".");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->strategy, SequenceOptions::Strategy::kOldest);
  EXPECT_EQ(options->max_active_sequences, 3);
  EXPECT_EQ(options->max_sequence_idle, std::chrono::microseconds(2500));
  SchedulerOptions scheduler;
  scheduler.max_batch_size = 4;
  scheduler.inputs = {{"INPUT", DataType::kInt32, {1}}};
  scheduler.outputs = {{"OUTPUT", DataType::kInt32, {1}}};
  ASSERT_TRUE(AddSequenceTensors(config, Signature(), &scheduler).ok());
  EXPECT_THAT(scheduler.preferred_batch_sizes, ElementsAre(2));
  EXPECT_EQ(scheduler.max_queue_delay, std::chrono::microseconds(500));
}

TEST(SequenceConfigTest, MistakesAreRefusedByName) {
  auto refused = [](const std::string& extra) {
    inference::ModelConfig config = Config(extra);
    return CompleteModelConfig(Signature(), &config);
  };
  EXPECT_THAT(refused(R"pb(sequence_batching { control_input
                                               [ {
                                                 name: "END",
                                                 control
                                                 [ {
                                                   kind: CONTROL_SEQUENCE_END,
                                                   int32_false_true: [ 1 ]
                                                 }]
                                               }] })pb")
                  .message(),
              HasSubstr("control_input 'END': needs one of int32_false_true"));
  EXPECT_THAT(
      refused(R"pb(sequence_batching { control_input
                                       [ {
                                         name: "C",
                                         control
                                         [ { kind: CONTROL_SEQUENCE_CORRID }]
                                       }] })pb")
          .message(),
      HasSubstr("needs a data_type"));
  EXPECT_THAT(
      refused("sequence_batching { iterative_sequence: true }").message(),
      HasSubstr("iterative_sequence"));
}

TEST(SequenceConfigTest, InitialStateFileStaysInsideItsFolder) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / "sequence_config_test";
  std::filesystem::create_directories(dir / "initial_state");
  const float values[2] = {1.5f, -2.0f};
  std::ofstream(dir / "initial_state" / "acc.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof(values));
  auto with_file = [&](const std::string& file) {
    inference::ModelConfig config = Config();
    auto* initial = config.mutable_sequence_batching()
                        ->mutable_state(0)
                        ->add_initial_state();
    initial->set_data_file(file);
    return SequenceOptionsFromConfig(config, dir);
  };
  auto ok = with_file("acc.bin");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->states[0].initial,
            std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  EXPECT_THAT(with_file("../config.pbtxt").status().message(),
              HasSubstr("must name a file inside initial_state/"));
  EXPECT_THAT(with_file("missing.bin").status().message(),
              HasSubstr("cannot be read"));
}

}  // namespace
}  // namespace coalesce
