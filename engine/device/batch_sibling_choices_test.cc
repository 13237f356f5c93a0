#include "engine/device/batch_sibling_choices.h"

#include <gtest/gtest.h>

namespace coalesce {
namespace {

TEST(BatchSiblingChoicesTest, NothingRecordedIsNothing) {
  BatchSiblingChoices choices;
  EXPECT_FALSE(choices.NearestAtLeast("conv a", 8).has_value());
  choices.Record("conv a", 64, "engine 3");
  EXPECT_FALSE(choices.NearestAtLeast("conv b", 8).has_value());
}

TEST(BatchSiblingChoicesTest, TheSmallestTunedSizeAtOrAboveWins) {
  BatchSiblingChoices choices;
  choices.Record("conv", 64, "large");
  choices.Record("conv", 4, "small");
  EXPECT_EQ(choices.NearestAtLeast("conv", 48), "large");
  EXPECT_EQ(choices.NearestAtLeast("conv", 64), "large");
  EXPECT_EQ(choices.NearestAtLeast("conv", 5), "large");
  EXPECT_EQ(choices.NearestAtLeast("conv", 4), "small");
  EXPECT_EQ(choices.NearestAtLeast("conv", 1), "small");
}

TEST(BatchSiblingChoicesTest, ALargerBatchThanAnyTunedHasNoSibling) {
  // A model_warmup sample of batch 1 runs first: batch 64 is then tuned
  // itself, not given batch 1's choice.
  BatchSiblingChoices choices;
  choices.Record("conv", 1, "one");
  EXPECT_FALSE(choices.NearestAtLeast("conv", 64).has_value());
  EXPECT_FALSE(choices.NearestAtLeast("conv", 2).has_value());
}

TEST(BatchSiblingChoicesTest, ARecordAtTheSameSizeReplacesTheOldOne) {
  BatchSiblingChoices choices;
  choices.Record("conv", 32, "first");
  choices.Record("conv", 32, "second");
  EXPECT_EQ(choices.NearestAtLeast("conv", 32), "second");
}

}  // namespace
}  // namespace coalesce
