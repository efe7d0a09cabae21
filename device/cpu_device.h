// CpuDevice: the host (or one logical CPU carved out of it). Kernels run on
// the calling thread and may split large loops over the device's intra-op
// thread pool (a SpinningThreadPool behind eigen_cpu_device()). A logical
// CPU with a memory limit fails allocations beyond it.
//
//   CpuDevice cpu(/*index=*/0, /*memory_limit=*/0, /*intra_op_threads=*/8);
//   ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DT_FLOAT, s, cpu.allocator()));
//   const Eigen::ThreadPoolDevice* pool = cpu.eigen_cpu_device();
//
// Thread-safe: any number of kernels may run on one CpuDevice at once.
#ifndef SLUICE_DEVICE_CPU_DEVICE_H_
#define SLUICE_DEVICE_CPU_DEVICE_H_

#include <cstdint>
#include <memory>

#include "core/allocator.h"
#include "device/device.h"

namespace sluice {

class LimitedAllocator;

class CpuDevice final : public Device {
 public:
  // `intra_op_threads` <= 1 means no pool: kernels run inline. Otherwise
  // the pool has intra_op_threads - 1 workers and eigen_cpu_device() says
  // intra_op_threads: a kernel's own thread is the last one.
  // `memory_limit` 0 means unlimited; otherwise allocations beyond it fail
  // with RESOURCE_EXHAUSTED. `reuse_blocks`: tensors come from
  // CachedCpuAllocator() (device/cpu_memory.h: a session's steps reuse the
  // blocks earlier steps freed), else from CpuAllocator().
  CpuDevice(int index, int64_t memory_limit, int intra_op_threads,
            bool reuse_blocks = false);
  ~CpuDevice() override;

  Allocator* allocator() override { return allocator_; }
  const Eigen::ThreadPoolDevice* eigen_cpu_device() const override;
  int intra_op_threads() const { return intra_op_threads_; }

 private:
  struct Pool;  // SpinningThreadPool + ThreadPoolDevice, in cpu_device.cc

  // Fixed at construction.
  const int intra_op_threads_;
  // Set when memory_limit > 0; retired, not deleted, with the device, so
  // tensors it allocated may outlive it (LimitedAllocator::Retire).
  std::unique_ptr<LimitedAllocator> limited_;
  Allocator* allocator_;  // limited_, CachedCpuAllocator() or CpuAllocator()
  std::unique_ptr<Pool> pool_;          // null when intra_op_threads <= 1
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_CPU_DEVICE_H_
