// CountingAllocator: host memory (CpuAllocator()) that counts what it hands
// out and takes back, for tests of what an allocator above it, or a copy,
// asks of its base; it can be told to fail past a number of live bytes.
//
//   CountingAllocator::Counts counts;
//   CachingHostAllocator cache(std::make_unique<CountingAllocator>(&counts), cap);
//   ...
//   EXPECT_EQ(counts.allocations, 1);
//
// The counts live where the caller says (they may outlive the allocator,
// which an owner such as a cache destroys), or in the allocator itself.
// Not thread-safe: one test thread at a time.
#ifndef SLUICE_TESTS_TESTING_COUNTING_ALLOCATOR_H_
#define SLUICE_TESTS_TESTING_COUNTING_ALLOCATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/allocator.h"

namespace sluice::testing {

class CountingAllocator final : public Allocator {
 public:
  struct Counts {
    int allocations = 0;
    int frees = 0;
    int64_t live_bytes = 0;
  };
  // Counts into *counts, or into the allocator's own when null; `limit` >
  // 0: an allocation that would take the live bytes past it fails with
  // RESOURCE_EXHAUSTED.
  explicit CountingAllocator(Counts* counts = nullptr, int64_t limit = 0)
      : counts_(counts != nullptr ? counts : &own_), limit_(limit) {}

  std::string Name() const override { return "counting host memory"; }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    if (limit_ > 0 && counts_->live_bytes + static_cast<int64_t>(bytes) > limit_) {
      return absl::ResourceExhaustedError("counting allocator: over its limit");
    }
    ++counts_->allocations;
    counts_->live_bytes += static_cast<int64_t>(bytes);
    return CpuAllocator()->Allocate(bytes);
  }
  void Deallocate(void* p, size_t bytes) override {
    ++counts_->frees;
    counts_->live_bytes -= static_cast<int64_t>(bytes);
    CpuAllocator()->Deallocate(p, bytes);
  }

  const Counts& counts() const { return *counts_; }

 private:
  Counts own_;
  Counts* const counts_;
  const int64_t limit_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_COUNTING_ALLOCATOR_H_
