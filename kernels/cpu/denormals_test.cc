#include "kernels/cpu/denormals.h"

#include <omp.h>

#include <atomic>
#include <cfloat>
#include <thread>

#include "gtest/gtest.h"
#include "kernels/cpu/threading.h"

namespace coalesce::kernels {
namespace {

// FLT_MIN * 0.25 is denormal. volatile keeps the compiler from folding the
// product, so the CPU's mode decides the result.
float QuarterOfFltMin() {
  volatile float a = FLT_MIN;
  volatile float b = 0.25f;
  return a * b;
}

// A denormal operand: with DAZ it reads as 0, so adding 0 gives 0.
float DenormalPlusZero() {
  volatile float denormal = 1e-40f;
  volatile float zero = 0.0f;
  return denormal + zero;
}

TEST(DenormalsTest, FlushesResultsAndOperandsOnTheCallingThread) {
  if (!FlushDenormalsSupported()) GTEST_SKIP() << "not an x86-64 build";
  std::thread t([] {
    EXPECT_FALSE(FlushDenormalsEnabled());
    EXPECT_GT(QuarterOfFltMin(), 0.0f);
    EXPECT_GT(DenormalPlusZero(), 0.0f);
    SetFlushDenormals(true);
    EXPECT_TRUE(FlushDenormalsEnabled());
    EXPECT_EQ(QuarterOfFltMin(), 0.0f);
    EXPECT_EQ(DenormalPlusZero(), 0.0f);
    SetFlushDenormals(false);
    EXPECT_FALSE(FlushDenormalsEnabled());
    EXPECT_GT(QuarterOfFltMin(), 0.0f);
  });
  t.join();
}

TEST(DenormalsTest, ReachesTheOpenMpThreadsOfTheCallingThread) {
  if (!FlushDenormalsSupported()) GTEST_SKIP() << "not an x86-64 build";
  std::thread t([] {
    SetIntraOpThreads(4);
    // The team's threads exist before the setting changes, so they must be
    // reached, not created afterwards (that case is the next test's).
    std::atomic<int> before{0};
#pragma omp parallel
    { before.fetch_add(1); }
    ASSERT_EQ(before.load(), 4);
    SetFlushDenormals(true);
    std::atomic<int> threads{0}, flushing{0}, zero_products{0};
#pragma omp parallel
    {
      threads.fetch_add(1);
      if (FlushDenormalsEnabled()) flushing.fetch_add(1);
      if (QuarterOfFltMin() == 0.0f) zero_products.fetch_add(1);
    }
    EXPECT_EQ(threads.load(), 4);
    EXPECT_EQ(flushing.load(), 4);
    EXPECT_EQ(zero_products.load(), 4);
    SetFlushDenormals(false);
    std::atomic<int> still_flushing{0};
#pragma omp parallel
    {
      if (FlushDenormalsEnabled()) still_flushing.fetch_add(1);
    }
    EXPECT_EQ(still_flushing.load(), 0);
  });
  t.join();
}

TEST(DenormalsTest, OpenMpThreadsCreatedLaterInheritIt) {
  if (!FlushDenormalsSupported()) GTEST_SKIP() << "not an x86-64 build";
  std::thread t([] {
    SetIntraOpThreads(1);
    SetFlushDenormals(true);
    SetIntraOpThreads(3);  // the runtime creates two threads now
    std::atomic<int> threads{0}, flushing{0};
#pragma omp parallel
    {
      threads.fetch_add(1);
      if (FlushDenormalsEnabled()) flushing.fetch_add(1);
    }
    EXPECT_EQ(threads.load(), 3);
    EXPECT_EQ(flushing.load(), 3);
  });
  t.join();
}

TEST(DenormalsTest, OtherThreadsAreUnaffected) {
  if (!FlushDenormalsSupported()) GTEST_SKIP() << "not an x86-64 build";
  std::atomic<bool> set{false};
  std::thread a([&] {
    SetFlushDenormals(true);
    set = true;
  });
  a.join();
  ASSERT_TRUE(set.load());
  std::thread b([] { EXPECT_FALSE(FlushDenormalsEnabled()); });
  b.join();
}

}  // namespace
}  // namespace coalesce::kernels
