#include "server/serial_worker.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace coalesce {
namespace {

TEST(SerialWorkerTest, RunsJobsInOrderOnItsOwnThread) {
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  absl::Notification release;
  {
    SerialWorker worker;
    // The first job blocks until every job is queued: the rest wait for it.
    worker.Post([&] { release.WaitForNotification(); });
    for (int i = 0; i < 5; ++i) {
      worker.Post([&, i] {
        absl::MutexLock lock(&mu);
        order.push_back(i);
        threads.push_back(std::this_thread::get_id());
      });
    }
    release.Notify();
  }  // the destructor runs what is queued, then joins
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  for (std::thread::id id : threads) {
    EXPECT_EQ(id, threads[0]);
    EXPECT_NE(id, std::this_thread::get_id());
  }
}

}  // namespace
}  // namespace coalesce
