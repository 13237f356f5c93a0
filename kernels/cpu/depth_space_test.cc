#include "kernels/cpu/depth_space.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

// [1, 4, 1, 2] with block 2: each output 2x4 plane interleaves the channels.
TEST(DepthSpaceTest, DepthToSpaceOneByteElementsBothModes) {
  const std::vector<uint8_t> x = {0, 1, 10, 11, 20, 21, 30, 31};
  std::vector<uint8_t> y(8);
  const DepthSpaceShape shape{.n = 1, .c = 4, .h = 1, .w = 2, .block = 2};
  DepthToSpace(x.data(), shape, DepthSpaceMode::kDcr, 1, y.data());
  // Row i, column w * 2 + j reads channel i * 2 + j.
  EXPECT_EQ(y, (std::vector<uint8_t>{0, 10, 1, 11, 20, 30, 21, 31}));
  DepthToSpace(x.data(), shape, DepthSpaceMode::kCrd, 1, y.data());
  EXPECT_EQ(y, (std::vector<uint8_t>{0, 10, 1, 11, 20, 30, 21, 31}));
}

TEST(DepthSpaceTest, ModesDifferWithSeveralOutputChannels) {
  std::vector<int64_t> x(8);
  for (int i = 0; i < 8; ++i) x[i] = i;  // [1, 8, 1, 1]
  std::vector<int64_t> dcr(8), crd(8);
  const DepthSpaceShape shape{.n = 1, .c = 8, .h = 1, .w = 1, .block = 2};
  DepthToSpace(x.data(), shape, DepthSpaceMode::kDcr, 8, dcr.data());
  DepthToSpace(x.data(), shape, DepthSpaceMode::kCrd, 8, crd.data());
  // DCR: channel (i * 2 + j) * 2 + c; CRD: channel c * 4 + i * 2 + j.
  EXPECT_EQ(dcr, (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(crd, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(DepthSpaceTest, SpaceToDepthInvertsDepthToSpace) {
  std::vector<float> x(2 * 18 * 2 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const DepthSpaceShape shape{.n = 2, .c = 18, .h = 2, .w = 3, .block = 3};
  for (DepthSpaceMode mode : {DepthSpaceMode::kDcr, DepthSpaceMode::kCrd}) {
    std::vector<float> space(x.size()), back(x.size());
    DepthToSpace(x.data(), shape, mode, 4, space.data());
    SpaceToDepth(space.data(), shape, mode, 4, back.data());
    EXPECT_EQ(back, x);
  }
}

}  // namespace
}  // namespace coalesce::kernels
