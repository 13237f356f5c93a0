#include "kernels/cpu/argmax.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

// Naive reference over [outer, axis, inner].
std::vector<int64_t> NaiveArgMax(const std::vector<float>& x, int64_t outer,
                                 int64_t axis, int64_t inner, bool last) {
  std::vector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 0; k < axis; ++k) {
        const float v = x[(o * axis + k) * inner + i];
        const float b = x[(o * axis + best) * inner + i];
        if (v > b || (last && v == b)) best = k;
      }
      out.push_back(best);
    }
  return out;
}

TEST(ArgMaxTest, MatchesNaiveWithTies) {
  const std::vector<float> x = {1, 5, 5, 0, 2, 2, 3, 3, 1, 0, 9, 9};
  for (bool last : {false, true}) {
    for (auto [outer, axis, inner] :
         {std::tuple<int64_t, int64_t, int64_t>{1, 12, 1},
          {2, 3, 2},
          {3, 2, 2},
          {1, 4, 3}}) {
      std::vector<int64_t> out(outer * inner);
      ArgMax(x.data(), outer, axis, inner, last, out.data());
      EXPECT_EQ(out, NaiveArgMax(x, outer, axis, inner, last))
          << outer << "x" << axis << "x" << inner << " last=" << last;
    }
  }
}

TEST(ArgMaxTest, Int64) {
  const std::vector<int64_t> x = {-3, -1, -2};
  int64_t out = -1;
  ArgMax(x.data(), 1, 3, 1, false, &out);
  EXPECT_EQ(out, 1);
}

}  // namespace
}  // namespace coalesce::kernels
