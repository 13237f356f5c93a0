// PackingIndices: the pack and unpack indices of a padding mask, with the
// expected indices written out by hand.
#include "engine/packing_indices.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;

TEST(PackingIndicesTest, BucketsAreEighthsOfThePaddedRows) {
  // 4 x 16 = 64 rows: buckets of 8.
  EXPECT_EQ(TokenBucket(0, 4, 16), 8);
  EXPECT_EQ(TokenBucket(1, 4, 16), 8);
  EXPECT_EQ(TokenBucket(8, 4, 16), 8);
  EXPECT_EQ(TokenBucket(9, 4, 16), 16);
  EXPECT_EQ(TokenBucket(63, 4, 16), 64);
  EXPECT_EQ(TokenBucket(64, 4, 16), 64);
  // 3 x 5 = 15 rows: buckets of 2, capped at 15.
  EXPECT_EQ(TokenBucket(14, 3, 5), 14);
  EXPECT_EQ(TokenBucket(15, 3, 5), 15);
  // One row.
  EXPECT_EQ(TokenBucket(0, 1, 1), 1);
  EXPECT_EQ(TokenBucket(1, 1, 1), 1);
}

// The CPU's buckets are 16 rows wide, whatever the batch shape.
TEST(PackingIndicesTest, CpuBucketsAreSixteenRows) {
  EXPECT_EQ(CpuTokenBuckets(8, 128), 64);
  EXPECT_EQ(CpuTokenBuckets(3, 5), 1);
  EXPECT_EQ(CpuTokenBuckets(1, 1), 1);
  EXPECT_EQ(TokenBucket(599, 8, 128, CpuTokenBuckets(8, 128)), 608);
  EXPECT_EQ(TokenBucket(608, 8, 128, CpuTokenBuckets(8, 128)), 608);
  EXPECT_EQ(TokenBucket(1, 8, 128, CpuTokenBuckets(8, 128)), 16);
  EXPECT_EQ(TokenBucket(1020, 8, 128, CpuTokenBuckets(8, 128)), 1024);
  EXPECT_EQ(TokenBucket(9, 3, 5, CpuTokenBuckets(3, 5)), 15);
  // The device's eighths round 599 of 1024 up to 640.
  EXPECT_EQ(TokenBucket(599, 8, 128), 640);
}

// The packed rows an attention reads: per entry its first real row, and
// each real row's position; the fillers after the real rows are not rows.
TEST(PackingIndicesTest, PackedRealRowsFollowTheMask) {
  // Left padding, a hole, an entry without real rows: 3 x 4, buckets of 4.
  const std::vector<int64_t> mask = {0, 1, 1, 1,  //
                                     0, 0, 0, 0,  //
                                     1, 0, 1, 0};
  PackingIndices p;
  ASSERT_TRUE(ComputePackingIndices(mask.data(), DataType::kInt64, 3, 4, &p,
                                    /*buckets=*/3)
                  .ok());
  ASSERT_EQ(p.pack.size(), 8u);  // 5 real rows, 3 fillers
  std::vector<int64_t> offsets(4), positions(8);
  EXPECT_EQ(
      PackedRealRows(p.pack.data(), 8, 3, 4, offsets.data(), positions.data()),
      5);
  EXPECT_THAT(offsets, ElementsAre(0, 3, 3, 5));
  positions.resize(5);
  EXPECT_THAT(positions, ElementsAre(1, 2, 3, 0, 2));
}

TEST(PackingIndicesTest, RightPaddedRows) {
  // Lengths 3, 1, 4 of 4: 8 real rows of 12; buckets of 2.
  const std::vector<int64_t> mask = {1, 1, 1, 0,  //
                                     1, 0, 0, 0,  //
                                     1, 1, 1, 1};
  PackingIndices p;
  ASSERT_TRUE(
      ComputePackingIndices(mask.data(), DataType::kInt64, 3, 4, &p).ok());
  EXPECT_EQ(p.tokens, 8);
  EXPECT_THAT(p.pack, ElementsAre(0, 1, 2, 4, 8, 9, 10, 11));
  EXPECT_THAT(p.unpack, ElementsAre(0, 1, 2, 8, 3, 8, 8, 8, 4, 5, 6, 7));
  EXPECT_THAT(p.spread, ElementsAre(0, 1, 2, 0, 3, 3, 3, 3, 4, 5, 6, 7));
}

TEST(PackingIndicesTest, FillersRepeatTheFirstRealRow) {
  // [2, 8] is 16 rows, buckets of 2: 5 real rows round up to 6.
  const std::vector<int32_t> mask = {0, 1, 1, 0, 0, 0, 0, 0,  //
                                     1, 1, 1, 0, 0, 0, 0, 0};
  PackingIndices p;
  ASSERT_TRUE(
      ComputePackingIndices(mask.data(), DataType::kInt32, 2, 8, &p).ok());
  EXPECT_EQ(p.tokens, 5);
  EXPECT_THAT(p.pack, ElementsAre(1, 2, 8, 9, 10, 1));
  EXPECT_THAT(p.unpack, ElementsAre(6, 0, 1, 6, 6, 6, 6, 6,  //
                                    2, 3, 4, 6, 6, 6, 6, 6));
  // A left-padded row spreads its first real row.
  EXPECT_THAT(p.spread, ElementsAre(0, 0, 1, 0, 0, 0, 0, 0,  //
                                    2, 3, 4, 2, 2, 2, 2, 2));
}

TEST(PackingIndicesTest, NoRealRowStillGivesOneRow) {
  const std::vector<uint8_t> mask(6, 0);
  PackingIndices p;
  ASSERT_TRUE(
      ComputePackingIndices(mask.data(), DataType::kBool, 2, 3, &p).ok());
  EXPECT_EQ(p.tokens, 0);
  EXPECT_THAT(p.pack, ElementsAre(0));
  EXPECT_THAT(p.unpack, ElementsAre(1, 1, 1, 1, 1, 1));
  EXPECT_THAT(p.spread, ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(PackingIndicesTest, FloatMasksTreatNegativeZeroAsPadding) {
  const std::vector<float> mask = {1.0f, -0.0f, 0.5f, 0.0f};
  PackingIndices p;
  ASSERT_TRUE(
      ComputePackingIndices(mask.data(), DataType::kFp32, 1, 4, &p).ok());
  EXPECT_EQ(p.tokens, 2);
  EXPECT_THAT(p.pack, ElementsAre(0, 2));
  EXPECT_THAT(p.unpack, ElementsAre(0, 2, 1, 2));
  const std::vector<uint16_t> half = {0x8000, 0x3c00};  // -0, 1
  ASSERT_TRUE(
      ComputePackingIndices(half.data(), DataType::kFp16, 1, 2, &p).ok());
  EXPECT_THAT(p.pack, ElementsAre(1));
  EXPECT_THAT(p.unpack, ElementsAre(1, 0));
}

TEST(PackingIndicesTest, ReusedOutputIsReset) {
  const std::vector<int64_t> full = {1, 1, 1, 1};
  const std::vector<int64_t> half = {1, 0, 1, 0};
  PackingIndices p;
  ASSERT_TRUE(
      ComputePackingIndices(full.data(), DataType::kInt64, 2, 2, &p).ok());
  EXPECT_EQ(p.tokens, 4);
  ASSERT_TRUE(
      ComputePackingIndices(half.data(), DataType::kInt64, 2, 2, &p).ok());
  EXPECT_EQ(p.tokens, 2);
  EXPECT_THAT(p.pack, ElementsAre(0, 2));
  EXPECT_THAT(p.unpack, ElementsAre(0, 2, 1, 2));
  EXPECT_THAT(p.spread, ElementsAre(0, 0, 1, 1));
}

TEST(PackingIndicesTest, StringMasksAreRefused) {
  const char bytes[4] = {};
  PackingIndices p;
  EXPECT_EQ(ComputePackingIndices(bytes, DataType::kBytes, 1, 1, &p).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce
