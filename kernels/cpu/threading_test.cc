#include "kernels/cpu/threading.h"

#include <omp.h>

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace coalesce::kernels {
namespace {

// Threads in a parallel region started from the calling thread.
int ThreadsInRegion() {
  std::atomic<int> count{0};
#pragma omp parallel
  { count.fetch_add(1); }
  return count.load();
}

TEST(ThreadingTest, LimitIsPerCallingThread) {
  int in_a = 0, in_b = 0, after_b = 0;
  std::thread a([&] {
    SetIntraOpThreads(1);
    in_a = ThreadsInRegion();
  });
  std::thread b([&] {
    SetIntraOpThreads(2);
    in_b = ThreadsInRegion();
    after_b = IntraOpThreads();
  });
  a.join();
  b.join();
  EXPECT_EQ(in_a, 1);
  EXPECT_EQ(in_b, 2);
  EXPECT_EQ(after_b, 2);
}

TEST(ThreadingTest, NonPositiveMeansOne) {
  std::thread t([] {
    SetIntraOpThreads(0);
    EXPECT_EQ(IntraOpThreads(), 1);
  });
  t.join();
}

TEST(ThreadingTest, ScopedLimitRestoresTheOneBefore) {
  int inside = 0, after = 0, threads_inside = 0;
  std::thread t([&] {
    SetIntraOpThreads(2);
    {
      ScopedIntraOpThreads one(1);
      inside = IntraOpThreads();
      threads_inside = ThreadsInRegion();
    }
    after = IntraOpThreads();
  });
  t.join();
  EXPECT_EQ(inside, 1);
  EXPECT_EQ(threads_inside, 1);
  EXPECT_EQ(after, 2);
}

}  // namespace
}  // namespace coalesce::kernels
