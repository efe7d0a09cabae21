// RunBlocks: a shared block counter, helpers on the pool, a spinning join.
#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#define EIGEN_USE_THREADS
#include "kernels/cpu/omp_threads.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace sluice::cpu {
namespace {

// What the caller and its helpers share. Helpers hold it by shared_ptr: one
// that starts after the caller returned finds no block left and touches
// only this.
struct Region {
  Region(int64_t blocks, absl::FunctionRef<void(int64_t)> fn)
      : blocks(blocks), fn(fn) {}
  const int64_t blocks;
  // Called only for a claimed block; the caller does not return before every
  // claimed block is done, so `fn` (on the caller's stack) is alive then.
  const absl::FunctionRef<void(int64_t)> fn;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};

  void Work() {
    for (int64_t b = next.fetch_add(1, std::memory_order_relaxed); b < blocks;
         b = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(b);
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

}  // namespace

int PoolThreads(const Eigen::ThreadPoolDevice* pool) {
  return pool == nullptr ? 1 : pool->numThreads();
}

void RunBlocks(const Eigen::ThreadPoolDevice* pool, int64_t blocks,
               absl::FunctionRef<void(int64_t)> fn) {
  if (blocks <= 0) return;
  const int64_t helpers =
      pool == nullptr ? 0 : std::min<int64_t>(pool->numThreads() - 1, blocks - 1);
  if (helpers <= 0) {
    for (int64_t b = 0; b < blocks; ++b) fn(b);
    return;
  }
  if (pool->numThreads() >= kLeastThreadsForTeamRegions) {
    // One team of fixed size for every region (decision 66): the workers
    // oneDNN's convolutions run on, so that no second set spins beside
    // them. A team's threads that find no block left wait at its barrier.
    if (InOmpTeam()) {  // a block of a region: this thread alone
      for (int64_t b = 0; b < blocks; ++b) fn(b);
      return;
    }
    if (OmpTeamsBuiltIn()) {
      Region region(blocks, fn);
      RunOnOmpTeam(pool->numThreads(), [&] { region.Work(); });
      return;
    }
  }
  auto region = std::make_shared<Region>(blocks, fn);
  for (int64_t h = 0; h < helpers; ++h) {
    pool->getPool()->Schedule([region] { region->Work(); });
  }
  region->Work();
  // Blocks claimed by helpers may still run: spin a little (they are short),
  // then give the core away between checks.
  for (int spins = 0;
       region->done.load(std::memory_order_acquire) < blocks; ++spins) {
    if (spins > 2000) std::this_thread::yield();
  }
}

}  // namespace sluice::cpu
