#include "kernels/cpu/gemm.h"

#include <omp.h>

#include <cmath>
#include <mutex>
#include <ostream>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/threading.h"

namespace coalesce::kernels {
namespace {

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Reference: explicit index arithmetic in double precision.
std::vector<float> NaiveGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             float alpha, const std::vector<float>& a,
                             const std::vector<float>& b, float beta,
                             const std::vector<float>& c) {
  std::vector<float> y(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double av = ta ? a[l * m + i] : a[i * k + l];
        const double bv = tb ? b[j * k + l] : b[l * n + j];
        acc += av * bv;
      }
      y[i * n + j] = static_cast<float>(alpha * acc + beta * c[i * n + j]);
    }
  }
  return y;
}

struct GemmCase {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
};

void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << (c.ta ? "T" : "N") << (c.tb ? "T" : "N") << " m=" << c.m
      << " n=" << c.n << " k=" << c.k << " alpha=" << c.alpha
      << " beta=" << c.beta;
}

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesNaive) {
  const GemmCase p = GetParam();
  const auto a = Random(p.m * p.k, 1), b = Random(p.k * p.n, 2);
  const auto c0 = Random(p.m * p.n, 3);
  std::vector<float> c = c0;
  GemmParams params{.trans_a = p.ta,
                    .trans_b = p.tb,
                    .m = p.m,
                    .n = p.n,
                    .k = p.k,
                    .alpha = p.alpha,
                    .beta = p.beta};
  ASSERT_TRUE(Sgemm(params, a.data(), b.data(), c.data()).ok());
  const auto want =
      NaiveGemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, a, b, p.beta, c0);
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_NEAR(c[i], want[i], 1e-3f * (1 + std::abs(want[i]))) << "at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmTest,
    ::testing::Values(GemmCase{false, false, 2, 3, 4, 1.0f, 0.0f},
                      GemmCase{true, false, 3, 5, 2, 0.5f, 1.0f},
                      GemmCase{false, true, 4, 4, 4, 1.0f, 2.0f},
                      GemmCase{true, true, 1, 7, 3, -1.0f, 0.0f},
                      GemmCase{false, false, 64, 128, 96, 1.0f, 0.0f},
                      GemmCase{false, true, 1, 300, 257, 1.0f, 1.0f},
                      GemmCase{true, true, 33, 65, 129, 0.25f, 0.5f},
                      GemmCase{true, false, 17, 1, 512, 1.0f, 0.0f}));

TEST(GemmTest, BetaZeroIgnoresNanInOutput) {
  const auto a = Random(64 * 64, 4), b = Random(64 * 64, 5);
  std::vector<float> c(64 * 64, std::nanf(""));
  ASSERT_TRUE(
      Sgemm({.m = 64, .n = 64, .k = 64}, a.data(), b.data(), c.data()).ok());
  for (float x : c) ASSERT_FALSE(std::isnan(x));
  std::vector<float> small(4, std::nanf(""));
  ASSERT_TRUE(
      Sgemm({.m = 2, .n = 2, .k = 2}, a.data(), b.data(), small.data()).ok());
  for (float x : small) ASSERT_FALSE(std::isnan(x));
}

// Entry i of a batch reads A's matrix i and B's matrix i % 2 (a broadcast
// B, as a batched MatMul's can be); each entry must equal its own product.
void ExpectBatchMatchesNaive(int64_t count, int64_t m, int64_t n, int64_t k,
                             std::set<int>* region_threads) {
  const auto a = Random(count * m * k, 6), b = Random(2 * k * n, 7);
  const auto c0 = Random(count * m * n, 8);
  std::vector<float> c = c0;
  std::mutex mu;
  const absl::Status s =
      SgemmBatch({.m = m, .n = n, .k = k, .beta = 0.5f}, count, [&](int64_t i) {
        {
          const std::lock_guard<std::mutex> lock(mu);
          region_threads->insert(omp_get_thread_num());
        }
        return GemmOperands{.a = a.data() + i * m * k,
                            .b = b.data() + (i % 2) * k * n,
                            .c = c.data() + i * m * n};
      });
  ASSERT_TRUE(s.ok()) << s;
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<float> ai(a.begin() + i * m * k,
                                a.begin() + (i + 1) * m * k);
    const std::vector<float> bi(b.begin() + (i % 2) * k * n,
                                b.begin() + (i % 2 + 1) * k * n);
    const std::vector<float> ci(c0.begin() + i * m * n,
                                c0.begin() + (i + 1) * m * n);
    const auto want = NaiveGemm(false, false, m, n, k, 1.0f, ai, bi, 0.5f, ci);
    for (int64_t j = 0; j < m * n; ++j)
      ASSERT_NEAR(c[i * m * n + j], want[j], 1e-3f) << "entry " << i;
  }
}

TEST(SgemmBatchTest, SmallProductsRunOnePerThreadInOneRegion) {
  std::set<int> threads;
  std::thread t([&] {
    SetIntraOpThreads(2);
    ExpectBatchMatchesNaive(7, 64, 48, 32, &threads);
  });
  t.join();
  EXPECT_EQ(threads, (std::set<int>{0, 1}));
}

TEST(SgemmBatchTest, LargeProductsAndSingleEntriesRunOnTheCallingThread) {
  std::set<int> threads;
  std::thread t([&] {
    SetIntraOpThreads(2);
    ExpectBatchMatchesNaive(2, 256, 256, 257, &threads);
    ExpectBatchMatchesNaive(1, 64, 48, 32, &threads);
  });
  t.join();
  EXPECT_EQ(threads, (std::set<int>{0}));
}

TEST(BroadcastToMatrixTest, AllBroadcastForms) {
  const std::vector<float> row = {1, 2, 3}, col = {10, 20},
                           full = {1, 2, 3, 4, 5, 6};
  std::vector<float> y(6);
  BroadcastToMatrix(row.data(), 1, 3, 2, 3, y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 1, 2, 3}));
  BroadcastToMatrix(col.data(), 2, 1, 2, 3, y.data());
  EXPECT_EQ(y, (std::vector<float>{10, 10, 10, 20, 20, 20}));
  BroadcastToMatrix(full.data(), 2, 3, 2, 3, y.data());
  EXPECT_EQ(y, full);
  BroadcastToMatrix(col.data(), 1, 1, 2, 3, y.data());
  EXPECT_EQ(y, (std::vector<float>(6, 10)));
}

}  // namespace
}  // namespace coalesce::kernels
