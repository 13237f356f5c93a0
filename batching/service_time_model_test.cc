#include "batching/service_time_model.h"

#include <chrono>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(ServiceTimeModelTest, NoSampleNoPrediction) {
  ServiceTimeModel model(8);
  EXPECT_FALSE(model.Predict(1).has_value());
  model.Record(2, milliseconds(2));
  EXPECT_FALSE(model.Predict(0).has_value());
  EXPECT_FALSE(model.Predict(9).has_value());
  model.Record(9, milliseconds(1));  // outside 1..8: ignored
  EXPECT_EQ(model.samples(9), 0);
}

TEST(ServiceTimeModelTest, TheMedianIgnoresAnOutlier) {
  ServiceTimeModel model(8);
  for (int i = 0; i < 9; ++i) model.Record(4, milliseconds(3));
  model.Record(4, milliseconds(400));  // a page fault, a cold graph
  EXPECT_EQ(*model.Predict(4), milliseconds(3));
}

TEST(ServiceTimeModelTest, FollowsDriftWithinItsWindow) {
  ServiceTimeModel model(8, /*window=*/16);
  for (int i = 0; i < 16; ++i) model.Record(8, milliseconds(4));
  for (int i = 0; i < 8; ++i) model.Record(8, milliseconds(6));
  EXPECT_EQ(*model.Predict(8), milliseconds(5));  // half and half
  for (int i = 0; i < 8; ++i) model.Record(8, milliseconds(6));
  EXPECT_EQ(*model.Predict(8), milliseconds(6));
  EXPECT_EQ(model.samples(8), 16);
}

TEST(ServiceTimeModelTest, UnseenSizesFollowTheLineThroughTheSeenOnes) {
  ServiceTimeModel model(16);
  for (int b : {1, 2, 4, 8}) {
    model.Record(b, microseconds(1000 + 500 * b));
  }
  EXPECT_EQ(*model.Predict(3), microseconds(2500));
  EXPECT_EQ(*model.Predict(16), microseconds(9000));
}

TEST(ServiceTimeModelTest, OneBadSizeDoesNotTiltTheLine) {
  ServiceTimeModel model(16);
  for (int b : {1, 2, 3, 4, 5}) model.Record(b, microseconds(1000 + 100 * b));
  model.Record(6, microseconds(50000));  // one size measured badly
  EXPECT_NEAR(model.Predict(10)->count(), 2000000, 100000);
}

TEST(ServiceTimeModelTest, WithOneSizeSeenOthersScaleByRows) {
  ServiceTimeModel model(8);
  model.Record(4, milliseconds(4));
  EXPECT_EQ(*model.Predict(8), milliseconds(8));
  EXPECT_EQ(*model.Predict(2), milliseconds(2));
}

TEST(ServiceTimeModelTest, BetweenTwoSeenSizesTheStraightLine) {
  ServiceTimeModel model(16);
  model.Record(2, milliseconds(2));
  model.Record(4, milliseconds(9));
  model.Record(8, milliseconds(5));
  EXPECT_EQ(*model.Predict(3), microseconds(5500));
  EXPECT_EQ(*model.Predict(6), milliseconds(7));
}

TEST(ServiceTimeModelTest, PredictAllAgreesWithPredictForEverySize) {
  ServiceTimeModel model(12);
  EXPECT_EQ(model.PredictAll(),
            std::vector<std::optional<Clock::Duration>>(12));
  model.Record(3, milliseconds(3));
  model.Record(5, milliseconds(8));
  model.Record(9, milliseconds(9));
  model.Record(10, milliseconds(12));
  const auto all = model.PredictAll();
  ASSERT_EQ(all.size(), 12u);
  for (int b = 1; b <= 12; ++b) {
    EXPECT_EQ(all[b - 1], model.Predict(b)) << "size " << b;
  }
  EXPECT_EQ(all[3], microseconds(5500));  // between 3 and 5
}

// Every size of 1..1024 seen: the line is fitted on a spread subset of
// them, and still finds t = 1 ms + 10 us per row beyond them.
TEST(ServiceTimeModelTest, ManySeenSizesStillGiveTheLine) {
  ServiceTimeModel model(2048);
  for (int b = 1; b <= 1024; ++b) model.Record(b, microseconds(1000 + 10 * b));
  EXPECT_EQ(*model.Predict(2048), microseconds(1000 + 10 * 2048));
}

}  // namespace
}  // namespace coalesce
