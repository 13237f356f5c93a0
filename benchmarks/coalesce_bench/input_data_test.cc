#include "benchmarks/coalesce_bench/input_data.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace coalesce::bench {
namespace {

std::string MessageOf(const absl::Status& s) {
  return std::string(s.message());
}

TEST(InputDataTest, BatchingModelGetsTheBatchSizeFirst) {
  ShapeRequest r;
  r.max_batch_size = 64;
  r.batch_size = 4;
  auto specs = ResolveInputShapes({{"input", "FP32", {-1, 1024}}}, r);
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].shape, (std::vector<int64_t>{4, 1024}));
}

TEST(InputDataTest, VariableDimensionNeedsAShapeFlag) {
  ShapeRequest r;
  r.max_batch_size = 8;
  auto missing = ResolveInputShapes({{"tokens", "INT64", {-1, -1}}}, r);
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(MessageOf(missing.status()).find("--shape tokens:"),
            std::string::npos)
      << missing.status();
  r.shapes["tokens"] = {128};
  auto given = ResolveInputShapes({{"tokens", "INT64", {-1, -1}}}, r);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ((*given)[0].shape, (std::vector<int64_t>{1, 128}));
}

TEST(InputDataTest, NonBatchingModelTakesTheFullShape) {
  ShapeRequest r;
  r.shapes["x"] = {2, 5};
  auto specs = ResolveInputShapes({{"x", "FP16", {-1, 5}}}, r);
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_EQ((*specs)[0].shape, (std::vector<int64_t>{2, 5}));
}

TEST(InputDataTest, ShapeErrors) {
  ShapeRequest r;
  r.max_batch_size = 8;
  r.shapes["x"] = {3};  // fixed dim is 4
  EXPECT_NE(MessageOf(ResolveInputShapes({{"x", "FP32", {-1, 4}}}, r).status())
                .find("does not fit"),
            std::string::npos);
  r.shapes.clear();
  r.shapes["nope"] = {3};
  EXPECT_NE(MessageOf(ResolveInputShapes({{"x", "FP32", {-1, 4}}}, r).status())
                .find("not an input of the model (inputs: x)"),
            std::string::npos);
  r.shapes.clear();
  r.batch_size = 9;
  EXPECT_NE(MessageOf(ResolveInputShapes({{"x", "FP32", {-1, 4}}}, r).status())
                .find("exceeds the model's max_batch_size 8"),
            std::string::npos);
  ShapeRequest no_batching;
  no_batching.batch_size = 2;
  no_batching.batch_size_set = true;
  EXPECT_EQ(
      ResolveInputShapes({{"x", "FP32", {4}}}, no_batching).status().code(),
      absl::StatusCode::kInvalidArgument);
  ShapeRequest plain;
  EXPECT_NE(
      MessageOf(ResolveInputShapes({{"x", "COMPLEX", {4}}}, plain).status())
          .find("unknown datatype"),
      std::string::npos);
}

TEST(InputDataTest, RandomDataHasTheRightSize) {
  const std::pair<const char*, size_t> cases[] = {
      {"FP32", 4},   {"FP64", 8},  {"FP16", 2},  {"BF16", 2},   {"INT8", 1},
      {"UINT16", 2}, {"INT32", 4}, {"INT64", 8}, {"UINT64", 8}, {"BOOL", 1}};
  for (const auto& [type, size] : cases) {
    auto data = RandomTensorData({"x", type, {3, 5}}, /*seed=*/1);
    ASSERT_TRUE(data.ok()) << type;
    EXPECT_EQ(data->size(), 15 * size) << type;
  }
}

TEST(InputDataTest, RandomValuesAreInRangeAndSeeded) {
  auto a = RandomTensorData({"x", "FP32", {1000}}, /*seed=*/5);
  auto b = RandomTensorData({"x", "FP32", {1000}}, /*seed=*/5);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  for (int i = 0; i < 1000; ++i) {
    float f;
    std::memcpy(&f, a->data() + 4 * i, 4);
    ASSERT_GE(f, -1.0f);
    ASSERT_LT(f, 1.0f);
  }
  auto flags = RandomTensorData({"b", "BOOL", {100}}, 1);
  for (char c : *flags) ASSERT_TRUE(c == 0 || c == 1);
}

TEST(InputDataTest, RandomBytesAreLengthPrefixed) {
  auto data = RandomTensorData({"s", "BYTES", {2, 3}}, /*seed=*/1);
  ASSERT_TRUE(data.ok());
  EXPECT_TRUE(CheckBytesTensor(*data, 6).ok());
  EXPECT_FALSE(CheckBytesTensor(*data, 5).ok());
  EXPECT_FALSE(CheckBytesTensor(data->substr(0, data->size() - 1), 6).ok());
}

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir();
    if (!dir_.empty() && dir_.back() == '/') dir_.pop_back();
  }
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << bytes;
  }
  std::string dir_;
};

TEST_F(InputFileTest, ReadsAFileOfTheRightSize) {
  Write("bench_in_ok", std::string(2 * 3 * 4, '\x01'));
  auto data = ReadTensorFile(dir_, {"bench_in_ok", "FP32", {2, 3}});
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->size(), 24u);
}

TEST_F(InputFileTest, WrongSizeNamesTheFileAndTheSizes) {
  Write("bench_in_short", std::string(10, '\0'));
  auto data = ReadTensorFile(dir_, {"bench_in_short", "FP32", {2, 3}});
  ASSERT_EQ(data.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m = MessageOf(data.status());
  EXPECT_NE(m.find("bench_in_short has 10 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("needs 24"), std::string::npos) << m;
}

TEST_F(InputFileTest, MissingFileIsNotFound) {
  auto data = ReadTensorFile(dir_, {"bench_in_absent", "FP32", {1}});
  EXPECT_EQ(data.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace coalesce::bench
