// kernels/cpu/parallel.h: every block runs exactly once and RunBlocks
// returns only after all have, on pools of every size, from several threads
// at once, and nested inside a block.
#include "kernels/cpu/parallel.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "device/cpu_device.h"
#include "gtest/gtest.h"

namespace sluice::cpu {
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
  for (int threads : {1, 2, 3, 16}) {
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

TEST(RunBlocksTest, ConcurrentAndNestedCallsShareOnePool) {
  CpuDevice cpu(0, 0, 3);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        RunBlocks(cpu.eigen_cpu_device(), 5, [&](int64_t) {
          // A block that splits again on the same pool.
          RunBlocks(cpu.eigen_cpu_device(), 3,
                    [&](int64_t) { total.fetch_add(1); });
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 20 * 5 * 3);
}

}  // namespace
}  // namespace sluice::cpu
