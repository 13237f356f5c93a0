#include "kernels/cpu/gather.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

TEST(GatherTest, MiddleAxisWithNegativeIndicesMatchesNaive) {
  const int64_t outer = 2, axis = 3, inner = 2;
  std::vector<float> src(outer * axis * inner);
  for (size_t i = 0; i < src.size(); ++i) src[i] = i * 1.5f;
  const std::vector<int64_t> idx = {2, -3, -1, 1};
  std::vector<float> out(outer * idx.size() * inner);
  ASSERT_TRUE(Gather(src.data(), outer, axis, inner * sizeof(float), idx.data(),
                     idx.size(), out.data())
                  .ok());
  std::vector<float> want;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx)
      for (int64_t k = 0; k < inner; ++k)
        want.push_back(src[(o * axis + (i < 0 ? i + axis : i)) * inner + k]);
  EXPECT_EQ(out, want);
}

TEST(GatherTest, Int32IndicesAndOutOfRange) {
  const std::vector<int64_t> src = {10, 20, 30};
  const std::vector<int32_t> idx = {-1, 0};
  std::vector<int64_t> out(2);
  ASSERT_TRUE(
      Gather(src.data(), 1, 3, sizeof(int64_t), idx.data(), 2, out.data())
          .ok());
  EXPECT_EQ(out, (std::vector<int64_t>{30, 10}));
  const std::vector<int64_t> bad = {3};
  EXPECT_EQ(Gather(src.data(), 1, 3, sizeof(int64_t), bad.data(), 1, out.data())
                .code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<int64_t> bad_low = {-4};
  EXPECT_EQ(
      Gather(src.data(), 1, 3, sizeof(int64_t), bad_low.data(), 1, out.data())
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coalesce::kernels
