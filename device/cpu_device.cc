// CpuDevice: the host allocator (optionally budgeted) and an Eigen pool.
#include "device/cpu_device.h"

#include <utility>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

#include "device/cpu_memory.h"
#include "device/limited_allocator.h"
#include "device/spinning_thread_pool.h"

namespace sluice {

// `threads` in all, the calling thread included: kernels split their work
// between the thread that runs them and the pool's threads - 1 workers
// (kernels/cpu/parallel.h), so a worker more would only spin beside them.
struct CpuDevice::Pool {
  explicit Pool(int threads) : pool(threads - 1), device(&pool, threads) {}
  SpinningThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

CpuDevice::CpuDevice(int index, int64_t memory_limit, int intra_op_threads,
                     bool reuse_blocks)
    : Device(DeviceType::kCpu, index, memory_limit),
      intra_op_threads_(intra_op_threads < 1 ? 1 : intra_op_threads) {
  Allocator* host = reuse_blocks ? CachedCpuAllocator() : CpuAllocator();
  if (memory_limit > 0) {
    limited_ = std::make_unique<LimitedAllocator>(host, name(), memory_limit);
    allocator_ = limited_.get();
  } else {
    allocator_ = host;
  }
  if (intra_op_threads_ > 1) pool_ = std::make_unique<Pool>(intra_op_threads_);
}

CpuDevice::~CpuDevice() { LimitedAllocator::Retire(std::move(limited_)); }

const Eigen::ThreadPoolDevice* CpuDevice::eigen_cpu_device() const {
  return pool_ ? &pool_->device : nullptr;
}

}  // namespace sluice
