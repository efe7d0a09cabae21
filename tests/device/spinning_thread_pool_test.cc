// device/spinning_thread_pool.h: every task runs once, from any thread,
// workers know their index, and the destructor runs what is still queued.
#include "device/spinning_thread_pool.h"

#include <atomic>
#include <set>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace sluice::spinning_thread_pool_test {
namespace {

TEST(SpinningThreadPoolTest, RunsEveryTaskOnceFromAnyThread) {
  std::atomic<int> runs{0};
  {
    // What the tasks touch is declared before the pool, so it outlives the
    // workers: the pool's destructor joins them.
    absl::Notification done;
    std::atomic<int> left{1000};
    SpinningThreadPool pool(3);
    EXPECT_EQ(pool.NumThreads(), 3);
    EXPECT_EQ(pool.CurrentThreadId(), -1);
    for (int i = 0; i < 500; ++i) {
      // Each task schedules one more from its worker.
      pool.Schedule([&] {
        runs.fetch_add(1);
        pool.Schedule([&] {
          runs.fetch_add(1);
          if (left.fetch_sub(1) == 1) done.Notify();
        });
        if (left.fetch_sub(1) == 1) done.Notify();
      });
    }
    done.WaitForNotification();
  }
  EXPECT_EQ(runs.load(), 1000);
}

TEST(SpinningThreadPoolTest, WorkersKnowTheirIndex) {
  absl::Mutex mu;
  std::set<int> ids;
  absl::Notification done;
  std::atomic<int> left{64};
  SpinningThreadPool pool(4);
  for (int i = 0; i < 64; ++i) {
    pool.Schedule([&] {
      const int id = pool.CurrentThreadId();
      {
        absl::MutexLock lock(&mu);
        ids.insert(id);
      }
      if (left.fetch_sub(1) == 1) done.Notify();
    });
  }
  done.WaitForNotification();
  absl::MutexLock lock(&mu);
  for (int id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 4);
  }
}

TEST(SpinningThreadPoolTest, DestructorRunsQueuedTasks) {
  std::atomic<int> runs{0};
  {
    // Declared before the pool, so it outlives the worker that waits on it:
    // the pool's destructor joins that worker.
    absl::Notification release;
    SpinningThreadPool pool(1);
    pool.Schedule([&] { release.WaitForNotification(); });
    for (int i = 0; i < 10; ++i) pool.Schedule([&] { runs.fetch_add(1); });
    release.Notify();
  }
  EXPECT_EQ(runs.load(), 10);
}

}  // namespace
}  // namespace sluice::spinning_thread_pool_test
