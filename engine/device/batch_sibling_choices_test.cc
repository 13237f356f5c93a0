#include "engine/device/batch_sibling_choices.h"

#include <gtest/gtest.h>

namespace coalesce {
namespace {

TEST(BatchSiblingChoicesTest, NothingRecordedIsNothing) {
  BatchSiblingChoices choices;
  EXPECT_FALSE(choices.Nearest("conv a", 8).has_value());
  choices.Record("conv a", 64, "engine 3");
  EXPECT_FALSE(choices.Nearest("conv b", 64).has_value());
}

TEST(BatchSiblingChoicesTest, TheNearestSizeInRatioWins) {
  BatchSiblingChoices choices;
  choices.Record("conv", 64, "large");
  choices.Record("conv", 4, "small");
  EXPECT_EQ(choices.Nearest("conv", 48), "large");
  EXPECT_EQ(choices.Nearest("conv", 64), "large");
  EXPECT_EQ(choices.Nearest("conv", 12), "small");  // 3x from 4, 5.3x from 64
  EXPECT_EQ(choices.Nearest("conv", 1), "small");
  EXPECT_EQ(choices.Nearest("conv", 256), "large");
}

TEST(BatchSiblingChoicesTest, ATieGoesToTheLargerSize) {
  BatchSiblingChoices choices;
  choices.Record("conv", 4, "small");
  choices.Record("conv", 16, "large");
  EXPECT_EQ(choices.Nearest("conv", 8), "large");  // 2x either way
}

TEST(BatchSiblingChoicesTest, ARecordAtTheSameSizeReplacesTheOldOne) {
  BatchSiblingChoices choices;
  choices.Record("conv", 32, "first");
  choices.Record("conv", 32, "second");
  EXPECT_EQ(choices.Nearest("conv", 32), "second");
}

TEST(BatchSiblingChoicesTest, ANonPositiveBatchHasNoSibling) {
  BatchSiblingChoices choices;
  choices.Record("conv", 32, "only");
  EXPECT_FALSE(choices.Nearest("conv", 0).has_value());
}

}  // namespace
}  // namespace coalesce
