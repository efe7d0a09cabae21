#include "device/parallel_memcpy.h"

#include <algorithm>
#include <cstring>
#include <thread>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {
namespace {

Eigen::ThreadPool* StagingPool() {
  static Eigen::ThreadPool* const kPool = new Eigen::ThreadPool(static_cast<int>(
      std::clamp(std::thread::hardware_concurrency() / 2, 2u, 16u)));
  return kPool;
}

}  // namespace

void ParallelMemcpy(void* dst, const void* src, size_t n) {
  constexpr size_t kPerThread = size_t{2} << 20;
  Eigen::ThreadPool* pool = StagingPool();
  const size_t parts = std::min<size_t>(pool->NumThreads() + 1, n / kPerThread);
  if (parts <= 1) {
    std::memcpy(dst, src, n);
    return;
  }
  const size_t step = (n + parts - 1) / parts;
  Eigen::Barrier barrier(static_cast<unsigned>(parts - 1));
  for (size_t p = 1; p < parts; ++p) {
    const size_t begin = p * step;
    const size_t len = begin < n ? std::min(step, n - begin) : 0;
    pool->Schedule([=, &barrier] {
      std::memcpy(static_cast<char*>(dst) + begin,
                  static_cast<const char*>(src) + begin, len);
      barrier.Notify();
    });
  }
  std::memcpy(dst, src, std::min(step, n));
  barrier.Wait();
}

}  // namespace sluice
