// Model warm-up at load (model_warmup.h): the config's samples as batches
// (data kinds, files, the model's input order, every refusal naming the
// sample and the input), and what runs on each instance: every sample
// `count` times, then each prepared batch size (each of its variants) twice
// with zeros.
#include "server/model_warmup.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "batching/fake_executor.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

namespace fs = std::filesystem;

// A batching model (max_batch_size 8) whose config lists x [3] FP32 before
// ids [2] INT64; the model's order is ids, then x.
inference::ModelConfig Config(const std::string& warmup) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(name: "m" max_batch_size: 8
         input [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] },
                 { name: "ids" data_type: TYPE_INT64 dims: [ 2 ] } ])" +
          warmup,
      &config));
  return config;
}

ModelSignature Signature() {
  ModelSignature s;
  s.inputs = {{"ids", DataType::kInt64, {-1, 2}},
              {"x", DataType::kFp32, {-1, 3}}};
  return s;
}

std::vector<float> Floats(const std::string& bytes) {
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), bytes.size());
  return f;
}

class ModelWarmupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "warmup");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void WriteFile(const std::string& name, const std::vector<float>& values) {
    std::ofstream out(dir_ / "warmup" / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(float)));
  }

  absl::StatusOr<std::vector<WarmupBatch>> Batches(const std::string& text) {
    return WarmupBatchesFromConfig(Config(text), Signature(), dir_);
  }

  static std::unique_ptr<FakeExecutorInstance> Fake(
      std::vector<int64_t> prepared = {}) {
    FakeExecutorInstance::Options o;
    o.auto_complete = true;
    o.inputs = {{"ids", DataType::kInt64, {-1, 2}},
                {"x", DataType::kFp32, {-1, 3}}};
    o.prepared_batch_sizes = std::move(prepared);
    return std::make_unique<FakeExecutorInstance>(o);
  }

  fs::path dir_;
};

TEST_F(ModelWarmupTest, SamplesBecomeBatchesInTheModelsInputOrder) {
  auto batches = Batches(R"(
      model_warmup [ { name: "s" batch_size: 4 count: 3
        inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ]
                                   random_data: true } }
        inputs { key: "ids" value: { data_type: TYPE_INT64 dims: [ 2 ]
                                     zero_data: true } } } ])");
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 1u);
  const WarmupBatch& b = (*batches)[0];
  EXPECT_EQ(b.name, "s");
  EXPECT_EQ(b.runs, 3);
  ASSERT_EQ(b.shapes.size(), 2u);
  EXPECT_EQ(b.shapes[0], (Shape{4, 2}));  // ids first: the model's order
  EXPECT_EQ(b.shapes[1], (Shape{4, 3}));
  EXPECT_EQ(b.data[0], std::string(4 * 2 * 8, '\0'));
  const std::vector<float> x = Floats(b.data[1]);
  ASSERT_EQ(x.size(), 12u);
  for (float v : x) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  for (int r = 1; r < 4; ++r)  // one random row, repeated
    for (int c = 0; c < 3; ++c) EXPECT_EQ(x[r * 3 + c], x[c]);
}

TEST_F(ModelWarmupTest, FileHoldsOneRowOrTheWholeBatch) {
  const std::string sample = R"(
      model_warmup [ { name: "f" batch_size: 2
        inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ]
                                   input_data_file: "x.bin" } }
        inputs { key: "ids" value: { data_type: TYPE_INT64 dims: [ 2 ]
                                     zero_data: true } } } ])";
  WriteFile("x.bin", {1, 2, 3});
  auto row = Batches(sample);
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(Floats((*row)[0].data[1]), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  WriteFile("x.bin", {1, 2, 3, 4, 5, 6});
  auto whole = Batches(sample);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(Floats((*whole)[0].data[1]),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  WriteFile("x.bin", {1, 2, 3, 4});
  auto odd = Batches(sample);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("warmup/x.bin holds 16 bytes"),
            std::string::npos)
      << odd.status();
}

TEST_F(ModelWarmupTest, BadSamplesAreRefusedWithTheirNames) {
  const std::string ids =
      R"(inputs { key: "ids" value: { data_type: TYPE_INT64 dims: [ 2 ]
                                      zero_data: true } })";
  const std::string x =
      R"(inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ]
                                    zero_data: true } })";
  struct Bad {
    std::string sample, expect;
  };
  const Bad bad[] = {
      {"batch_size: 9 " + ids + x, "batch_size 9 is not in 1..8"},
      {"batch_size: 0 " + ids + x, "batch_size 0"},
      {"batch_size: 1 " + ids, "input 'x' has no data"},
      {"batch_size: 1 " + ids + x +
           R"(inputs { key: "y" value: { zero_data: true } })",
       "'y' is not an input"},
      {"batch_size: 1 " + ids +
           R"(inputs { key: "x" value: { data_type: TYPE_FP16 dims: [ 3 ]
                                        zero_data: true } })",
       "input 'x': data_type TYPE_FP16"},
      {"batch_size: 1 " + ids +
           R"(inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 4 ]
                                        zero_data: true } })",
       "input 'x': dim 0 is 4"},
      {"batch_size: 1 " + ids +
           R"(inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ] } })",
       "input 'x': no data"},
      {"batch_size: 1 " + ids +
           R"(inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ]
                                        input_data_file: "../x.bin" } })",
       "leaves the warmup folder"},
      {"batch_size: 1 " + ids +
           R"(inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ]
                                        input_data_file: "none.bin" } })",
       "cannot read warmup/none.bin"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.sample);
    auto batches =
        Batches("model_warmup [ { name: \"bad\" " + b.sample + " } ]");
    ASSERT_FALSE(batches.ok());
    EXPECT_EQ(batches.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(batches.status().message().find("model_warmup 'bad'"),
              std::string::npos)
        << batches.status();
    EXPECT_NE(batches.status().message().find(b.expect), std::string::npos)
        << batches.status();
  }
}

// Each instance runs the sample `count` times, then each of its prepared
// batch sizes (up to max_batch_size) twice with zeros, largest first.
TEST_F(ModelWarmupTest, EveryInstanceRunsSamplesThenPreparedSizesTwice) {
  const inference::ModelConfig config = Config(R"(
      model_warmup [ { name: "s" batch_size: 3 count: 2
        inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ]
                                   random_data: true } }
        inputs { key: "ids" value: { data_type: TYPE_INT64 dims: [ 2 ]
                                     zero_data: true } } } ])");
  auto samples = WarmupBatchesFromConfig(config, Signature(), dir_);
  ASSERT_TRUE(samples.ok()) << samples.status();
  std::vector<std::unique_ptr<ExecutorInstance>> instances;
  instances.push_back(Fake({1, 2, 4, 8, 16}));  // 16: past max_batch_size
  instances.push_back(Fake());
  auto report = WarmUpInstances(config, Signature(), *samples, instances);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->batches, 2 + 4 * 2 + 2);
  std::vector<int64_t> rows;
  for (const auto& b :
       static_cast<FakeExecutorInstance&>(*instances[0]).batches()) {
    rows.push_back(b.input_shapes[0][0]);
    if (rows.size() > 2) {
      EXPECT_EQ(b.inputs[1], std::string(b.input_shapes[1][0] * 3 * 4, '\0'));
    }
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{3, 3, 8, 8, 4, 4, 2, 2, 1, 1}));
  EXPECT_EQ(static_cast<FakeExecutorInstance&>(*instances[1]).batches().size(),
            2u);
}

// Slots that set up on their own buffers (a batch of 1's graph): every
// slot is ready for every prepared size when warm-up returns.
TEST_F(ModelWarmupTest, EverySlotIsReadyForEveryPreparedSize) {
  const inference::ModelConfig config = Config("");
  FakeExecutorInstance::Options o;
  o.auto_complete = true;
  o.num_slots = 2;
  o.inputs = {{"ids", DataType::kInt64, {-1, 2}},
              {"x", DataType::kFp32, {-1, 3}}};
  o.prepared_batch_sizes = {1, 2, 4};
  o.setup_batches = 2;
  o.setup_per_slot = true;
  std::vector<std::unique_ptr<ExecutorInstance>> instances;
  instances.push_back(std::make_unique<FakeExecutorInstance>(o));
  auto report = WarmUpInstances(config, Signature(), {}, instances);
  ASSERT_TRUE(report.ok()) << report.status();
  for (int k = 0; k < 2; ++k) {
    for (int64_t rows : {1, 2, 4}) {
      EXPECT_TRUE(instances[0]->slot(k)->ReadyFor({{rows, 2}, {rows, 3}}))
          << "slot " << k << ", " << rows << " rows";
    }
  }
  int on_slot_1 = 0;
  for (const auto& b :
       static_cast<FakeExecutorInstance&>(*instances[0]).batches())
    on_slot_1 += b.slot == 1;
  EXPECT_GT(on_slot_1, 0);
  EXPECT_EQ(report->batches, 3 * 2 + on_slot_1);
}

// An instance whose sizes take several batches to prepare (a token-packed
// model's token buckets): each size runs each variant twice, the variant
// written by the instance into the batch of zeros, in its order; the log
// names carry it.
TEST_F(ModelWarmupTest, EachPreparedSizeRunsEveryVariantTwice) {
  const inference::ModelConfig config = Config("");
  FakeExecutorInstance::Options o;
  o.auto_complete = true;
  o.inputs = {{"ids", DataType::kInt64, {-1, 2}},
              {"x", DataType::kFp32, {-1, 3}}};
  o.prepared_batch_sizes = {1, 2};
  o.prepared_variants = 3;
  std::vector<std::unique_ptr<ExecutorInstance>> instances;
  instances.push_back(std::make_unique<FakeExecutorInstance>(o));
  std::string why;
  const std::vector<WarmupBatch> prepared =
      PreparedSizeBatches(config, Signature(), *instances[0], &why);
  ASSERT_EQ(prepared.size(), 6u) << why;
  EXPECT_EQ(prepared[0].name, "batch size 2, variant 1 of 3");
  EXPECT_EQ(prepared[5].name, "batch size 1, variant 3 of 3");
  auto report = WarmUpInstances(config, Signature(), {}, instances);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->batches, 2 * 3 * 2);
  std::vector<std::pair<int64_t, int>> run;  // (rows, variant written)
  for (const auto& b :
       static_cast<FakeExecutorInstance&>(*instances[0]).batches()) {
    run.emplace_back(b.input_shapes[0][0], b.inputs[0][0]);
    // Only what chooses the variant was written: the rest is zeros.
    EXPECT_EQ(b.inputs[0].substr(1), std::string(b.inputs[0].size() - 1, '\0'));
    EXPECT_EQ(b.inputs[1], std::string(b.inputs[1].size(), '\0'));
  }
  EXPECT_EQ(run, (std::vector<std::pair<int64_t, int>>{{2, 1},
                                                       {2, 1},
                                                       {2, 2},
                                                       {2, 2},
                                                       {2, 3},
                                                       {2, 3},
                                                       {1, 1},
                                                       {1, 1},
                                                       {1, 2},
                                                       {1, 2},
                                                       {1, 3},
                                                       {1, 3}}));
}

TEST_F(ModelWarmupTest, VariableDimsLeavePreparedSizesOut) {
  inference::ModelConfig config = Config("");
  config.mutable_input(0)->set_dims(0, -1);
  auto fake = Fake({1, 2});
  std::string why;
  EXPECT_TRUE(PreparedSizeBatches(config, Signature(), *fake, &why).empty());
  EXPECT_NE(why.find("input 'x' has a variable dim"), std::string::npos);
}

TEST_F(ModelWarmupTest, AFailingBatchFailsTheLoadNamingTheInstance) {
  const inference::ModelConfig config = Config("");
  auto fake = Fake({2});
  fake->SetOutputFunction([](const FakeExecutorInstance::RecordedBatch&,
                             std::vector<FakeExecutorInstance::FakeOutput>*) {
    return absl::InternalError("device fault");
  });
  std::vector<std::unique_ptr<ExecutorInstance>> instances;
  instances.push_back(Fake());
  instances.push_back(std::move(fake));
  auto report = WarmUpInstances(config, Signature(), {}, instances);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(report.status().message(),
            "warm-up 'batch size 2' failed on instance 1: device fault");
}

}  // namespace
}  // namespace coalesce
