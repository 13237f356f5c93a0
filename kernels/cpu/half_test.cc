#include "kernels/cpu/half.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

float FromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

bool IsHalfNan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

TEST(HalfTest, ExactValuesToHalf) {
  EXPECT_EQ(FloatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(-2.5f), 0xc100);
  EXPECT_EQ(FloatToHalfBits(100.0f), 0x5640);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);  // largest finite half
  EXPECT_EQ(FloatToHalfBits(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalfBits(0x1p-24f), 0x0001);  // smallest subnormal
}

TEST(HalfTest, RoundsToNearestEven) {
  EXPECT_EQ(FloatToHalfBits(0.1f), 0x2e66);
  EXPECT_EQ(FloatToHalfBits(1.0f / 3.0f), 0x3555);
  // 1 + 2^-11 lies halfway between 0x3c00 and 0x3c01: even wins.
  EXPECT_EQ(FloatToHalfBits(FromBits(0x3f801000)), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 0x3c01 and 0x3c02: even wins.
  EXPECT_EQ(FloatToHalfBits(FromBits(0x3f803000)), 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(FloatToHalfBits(FromBits(0x3f801001)), 0x3c01);
  EXPECT_EQ(FloatToHalfBits(2049.0f), 0x6800);  // halfway 2048/2050 -> 2048
  EXPECT_EQ(FloatToHalfBits(65519.0f), 0x7bff);
}

TEST(HalfTest, SubnormalsAndUnderflow) {
  EXPECT_EQ(FloatToHalfBits(0x1p-25f), 0x0000);      // halfway 0/1 -> 0
  EXPECT_EQ(FloatToHalfBits(0x1.8p-25f), 0x0001);    // above halfway
  EXPECT_EQ(FloatToHalfBits(0x1.8p-24f), 0x0002);    // halfway 1/2 -> 2
  EXPECT_EQ(FloatToHalfBits(-0x1p-30f), 0x8000);     // -0
  EXPECT_EQ(FloatToHalfBits(0x1.ff8p-15f), 0x03ff);  // largest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1.ffcp-15f), 0x0400);  // halfway -> normal
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::denorm_min()), 0);
}

TEST(HalfTest, OverflowInfinityAndNan) {
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(1e6f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-1e6f), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(INFINITY), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-INFINITY), 0xfc00);
  EXPECT_TRUE(IsHalfNan(FloatToHalfBits(NAN)));
  EXPECT_TRUE(IsHalfNan(FloatToHalfBits(-NAN)));
}

TEST(HalfTest, HalfToFloat) {
  EXPECT_EQ(HalfBitsToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfBitsToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfBitsToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfBitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(HalfBitsToFloat(0x03ff), 0x1.ff8p-15f);  // largest subnormal
  EXPECT_EQ(HalfBitsToFloat(0xc100), -2.5f);
  EXPECT_EQ(HalfBitsToFloat(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7e00)));
  EXPECT_TRUE(std::signbit(HalfBitsToFloat(0x8000)));
  EXPECT_EQ(HalfBitsToFloat(0x8000), 0.0f);
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    if (IsHalfNan(bits)) continue;
    ASSERT_EQ(FloatToHalfBits(HalfBitsToFloat(bits)), bits) << h;
  }
}

TEST(BFloat16Test, ToAndFromFloat) {
  EXPECT_EQ(FloatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16Bits(-100.0f), 0xc2c8);
  EXPECT_EQ(FloatToBf16Bits(3.14159274f), 0x4049);
  EXPECT_EQ(Bf16BitsToFloat(0x4049), 3.140625f);
  EXPECT_EQ(Bf16BitsToFloat(0xc2c8), -100.0f);
  // Halfway cases round to even; above halfway rounds up.
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x3f808000)), 0x3f80);
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x3f818000)), 0x3f82);
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x3f808001)), 0x3f81);
  // The largest float rounds to infinity; infinities and NaN stay.
  EXPECT_EQ(FloatToBf16Bits(FromBits(0x7f7fffff)), 0x7f80);
  EXPECT_EQ(FloatToBf16Bits(-INFINITY), 0xff80);
  EXPECT_TRUE(std::isnan(Bf16BitsToFloat(FloatToBf16Bits(NAN))));
  EXPECT_EQ(FloatToBf16Bits(-0.0f), 0x8000);
}

}  // namespace
}  // namespace coalesce::kernels
