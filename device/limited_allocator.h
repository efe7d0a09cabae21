// LimitedAllocator: wraps another allocator and fails any allocation that
// would take the bytes in use past a fixed limit, so that a logical device
// with a memory budget behaves like a smaller device.
//
//   LimitedAllocator a(CpuAllocator(), "/cpu:1", /*limit=*/1 << 20);
//   absl::StatusOr<void*> p = a.Allocate(2 << 20);  // RESOURCE_EXHAUSTED
//   a.bytes_in_use();                               // 0
//
// Thread-safe: the count is kept under a mutex.
#ifndef SLUICE_DEVICE_LIMITED_ALLOCATOR_H_
#define SLUICE_DEVICE_LIMITED_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/allocator.h"

namespace sluice {

class LimitedAllocator final : public Allocator {
 public:
  // `base` is not owned and must outlive this allocator. `device_name` is
  // used in error messages. REQUIRES: limit > 0.
  LimitedAllocator(Allocator* base, std::string device_name, int64_t limit);

  std::string Name() const override;
  bool host_accessible() const override { return base_->host_accessible(); }
  // RESOURCE_EXHAUSTED naming the device, the bytes asked, the limit and the
  // bytes in use when the allocation would exceed the limit.
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;

  int64_t limit() const { return limit_; }
  int64_t bytes_in_use() const;
  int64_t peak_bytes_in_use() const;

  // Gives up the owner's hold: the allocator is deleted now when nothing it
  // allocated is in use, else by the Deallocate of its last allocation
  // (empty ones count). A device retires its allocator instead of deleting it, so that
  // tensors it handed out (a session's host fetches on a logical CPU with
  // a budget) may outlive the device and the session, as fetches from an
  // unbudgeted CPU do. No Allocate may follow.
  static void Retire(std::unique_ptr<LimitedAllocator> allocator);

 private:
  // Fixed at construction.
  Allocator* const base_;
  const std::string device_name_;
  const int64_t limit_;

  mutable absl::Mutex mu_;
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
  // Allocations not yet deallocated, empty ones included (an empty
  // tensor's buffer is freed like any other): retirement ends at zero.
  int64_t live_ ABSL_GUARDED_BY(mu_) = 0;
  bool retired_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_LIMITED_ALLOCATOR_H_
