// kernels/cpu/parallel.h: every block runs exactly once and RunBlocks
// returns only after all have, on pools of every size (from 8 threads on an
// OpenMP team, kernels/cpu/omp_threads.h), from several threads at once,
// nested inside a block, and inside a convolution's team.
#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "device/cpu_device.h"
#include "gtest/gtest.h"
#include "kernels/cpu/omp_threads.h"

namespace sluice::cpu::parallel_test {
namespace {

void ExpectEachBlockOnce(const CpuDevice& cpu, int64_t blocks) {
  std::vector<std::atomic<int>> runs(blocks);
  RunBlocks(cpu.eigen_cpu_device(), blocks, [&](int64_t b) {
    runs[b].fetch_add(1, std::memory_order_relaxed);
  });
  for (int64_t b = 0; b < blocks; ++b) {
    ASSERT_EQ(runs[b].load(), 1) << "block " << b << " of " << blocks;
  }
}

TEST(RunBlocksTest, EachBlockRunsOnceOnAnyPool) {
  for (int threads : {1, 2, 3, 8, 16}) {
    CpuDevice cpu(0, 0, threads);
    for (int64_t blocks : {0, 1, 2, 3, 17, 1000}) {
      ExpectEachBlockOnce(cpu, blocks);
    }
  }
}

TEST(RunBlocksTest, ReturnsOnlyWhenSlowBlocksOnOtherThreadsAreDone) {
  CpuDevice cpu(0, 0, 4);
  std::atomic<int64_t> done{0};
  RunBlocks(cpu.eigen_cpu_device(), 8, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 8);
}

// Four callers, each splitting blocks that split again on the same pool;
// returns how many inner blocks ran (want 4 * 20 * 5 * 3).
int64_t ConcurrentNestedBlocks(const CpuDevice& cpu) {
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        RunBlocks(cpu.eigen_cpu_device(), 5, [&](int64_t) {
          RunBlocks(cpu.eigen_cpu_device(), 3,
                    [&](int64_t) { total.fetch_add(1); });
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  return total.load();
}

TEST(RunBlocksTest, ConcurrentAndNestedCallsShareOnePool) {
  CpuDevice cpu(0, 0, 3);
  EXPECT_EQ(ConcurrentNestedBlocks(cpu), 4 * 20 * 5 * 3);
}

// From kLeastThreadsForTeamRegions threads the regions run on OpenMP teams,
// which give their cores back.
TEST(RunBlocksTest, ConcurrentAndNestedCallsOnATeamSizedPool) {
  CpuDevice cpu(0, 0, 16);
  EXPECT_EQ(ConcurrentNestedBlocks(cpu), 4 * 20 * 5 * 3);
  EXPECT_EQ(OmpCoresFree(),
            static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

// Two blocks that each wait for the other: they finish only if the region
// runs them on two threads at once. Fails (instead of hanging) after 10 s.
TEST(RunBlocksTest, ATeamSizedPoolRunsBlocksConcurrently) {
  if (std::thread::hardware_concurrency() < 2) {
    GTEST_SKIP() << "one core: a region runs on one thread";
  }
  CpuDevice cpu(0, 0, 16);
  std::atomic<int> arrived{0};
  std::atomic<bool> timed_out{false};
  RunBlocks(cpu.eigen_cpu_device(), 2, [&](int64_t) {
    arrived.fetch_add(1);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_FALSE(timed_out.load()) << "the two blocks never ran at once";
}

// A region inside a convolution's OmpThreads scope runs on that team
// without asking for cores again (it would wait for itself), and a scope
// opened inside a block takes none.
TEST(RunBlocksTest, RegionsInsideAConvolutionsTeamAndTeamsInsideABlock) {
  const int cores =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  CpuDevice cpu(0, 0, 16);
  std::atomic<int64_t> total{0};
  {
    OmpThreads team(cores);
    RunBlocks(cpu.eigen_cpu_device(), 40, [&](int64_t) {
      OmpThreads inner(cores);  // inside a team: nothing
      total.fetch_add(1);
    });
  }
  EXPECT_EQ(total.load(), 40);
  RunBlocks(cpu.eigen_cpu_device(), 40, [&](int64_t) {
    OmpThreads inner(cores);
    total.fetch_add(1);
  });
  EXPECT_EQ(total.load(), 80);
  EXPECT_EQ(OmpCoresFree(), cores);
}

}  // namespace
}  // namespace sluice::cpu::parallel_test
