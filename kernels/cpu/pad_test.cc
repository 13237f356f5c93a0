#include "kernels/cpu/pad.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

std::vector<float> Pad1D(const std::vector<float>& x, int64_t b, int64_t e,
                         PadMode mode) {
  std::vector<float> out(x.size() + b + e);
  const float zero = 0;
  Pad(x.data(), {static_cast<int64_t>(x.size())}, {b}, {e}, mode, &zero,
      sizeof(float), out.data());
  return out;
}

TEST(PadTest, OneDimModes) {
  const std::vector<float> x = {1, 2, 3};
  EXPECT_EQ(Pad1D(x, 2, 1, PadMode::kConstant),
            (std::vector<float>{0, 0, 1, 2, 3, 0}));
  EXPECT_EQ(Pad1D(x, 2, 2, PadMode::kEdge),
            (std::vector<float>{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(Pad1D(x, 2, 2, PadMode::kReflect),
            (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(Pad1D(x, -1, 1, PadMode::kConstant), (std::vector<float>{2, 3, 0}));
}

TEST(PadTest, TwoDimReflectMatchesNaive) {
  // [2,3] padded by (1,2) begin and (1,1) end, reflect.
  const std::vector<int64_t> x = {1, 2, 3, 4, 5, 6};
  const int64_t fill = 0;
  std::vector<int64_t> out(4 * 6);
  Pad(x.data(), {2, 3}, {1, 2}, {1, 1}, PadMode::kReflect, &fill,
      sizeof(int64_t), out.data());
  auto reflect = [](int64_t i, int64_t n) {
    if (i < 0) return -i;
    if (i >= n) return 2 * (n - 1) - i;
    return i;
  };
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; ++c)
      EXPECT_EQ(out[r * 6 + c], x[reflect(r - 1, 2) * 3 + reflect(c - 2, 3)])
          << r << "," << c;
}

TEST(PadTest, TwoDimConstantHasBorderRowsAndColumns) {
  // [2,2] with one row of the constant above, its last row cropped away
  // (end pad -1), and one column of the constant on each side.
  const std::vector<float> x = {1, 2, 3, 4};
  const float fill = 9;
  std::vector<float> out(2 * 4);
  Pad(x.data(), {2, 2}, {1, 1}, {-1, 1}, PadMode::kConstant, &fill,
      sizeof(float), out.data());
  EXPECT_EQ(out, (std::vector<float>{9, 9, 9, 9,  //
                                     9, 1, 2, 9}));
}

TEST(PadTest, ReflectWiderThanTheInputMirrorsAgainAndAgain) {
  // Pads many times the input's size: the mirror bounces off both ends.
  // Expected values written out by hand for n = 3 (period 4: 1 2 3 2).
  const std::vector<float> x = {1, 2, 3};
  EXPECT_EQ(
      Pad1D(x, 7, 6, PadMode::kReflect),
      (std::vector<float>{2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1}));
  // n = 2 (period 2) and n = 1 (every element is the one value).
  EXPECT_EQ(Pad1D({5, 6}, 3, 4, PadMode::kReflect),
            (std::vector<float>{6, 5, 6, 5, 6, 5, 6, 5, 6}));
  EXPECT_EQ(Pad1D({4}, 3, 2, PadMode::kReflect),
            (std::vector<float>{4, 4, 4, 4, 4, 4}));
}

}  // namespace
}  // namespace coalesce::kernels
