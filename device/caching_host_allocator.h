// CachingHostAllocator: keeps the blocks freed from another allocator for
// reuse, as PyTorch's caching host allocator does for pinned memory.
// Page-locking memory costs about a millisecond per ten megabytes and
// cudaFreeHost synchronises the device, so a step that fetches into fresh
// page-locked memory every time (StepOptions::pinned_host_fetches) would
// lose more than the DMA saves; with the cache, steps of one shape reuse
// the same blocks. CUDA-free: device/pinned_memory.h puts it over
// cudaHostAlloc, and tests over a counting allocator.
//
//   CachingHostAllocator cache(std::move(base), /*max_cached_bytes=*/1 << 30);
//   void* p = *cache.Allocate(10 << 20);   // from base
//   cache.Deallocate(p, 10 << 20);         // kept
//   void* q = *cache.Allocate(10 << 20);   // the same block, base untouched
//   cache.ReleaseCached();                 // what is kept goes back to base
//
// Sizes are rounded up to 4 KiB; a request takes the smallest kept block of
// at least its rounded size and at most twice it (of one size, the one
// freed last), else a new one. A freed
// block is kept while the kept bytes stay within max_cached_bytes, and
// handed back to the base otherwise. Requests below min_cached_bytes go to
// the base as they are, neither rounded nor kept (device/cpu_memory.h: the
// C library serves small host blocks from its heap without new pages).
// Thread-safe; the base is called without the lock held.
#ifndef SLUICE_DEVICE_CACHING_HOST_ALLOCATOR_H_
#define SLUICE_DEVICE_CACHING_HOST_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/allocator.h"

namespace sluice {

class CachingHostAllocator final : public Allocator {
 public:
  // REQUIRES: base != nullptr, max_cached_bytes >= 0.
  CachingHostAllocator(std::unique_ptr<Allocator> base,
                       int64_t max_cached_bytes, size_t min_cached_bytes = 0);
  // Hands the kept blocks back to the base. Blocks still in use at
  // destruction are not tracked further (the base must outlive them).
  ~CachingHostAllocator() override;

  std::string Name() const override { return base_->Name(); }
  bool host_accessible() const override { return base_->host_accessible(); }
  // The base's error when it has to allocate and cannot.
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;

  // Hands every kept block back to the base; returns their bytes.
  int64_t ReleaseCached();
  // Changes the cap for blocks freed from now on (what is kept stays until
  // ReleaseCached).
  void SetMaxCachedBytes(int64_t max_cached_bytes);

  struct Stats {
    int64_t bytes_in_use = 0;   // blocks handed out, rounded sizes
    int64_t bytes_cached = 0;   // blocks kept for reuse
    int64_t hits = 0;           // Allocate calls served from the cache
    int64_t misses = 0;         // Allocate calls that went to the base
  };
  Stats GetStats() const;

 private:
  const std::unique_ptr<Allocator> base_;
  const size_t min_cached_bytes_;

  mutable absl::Mutex mu_;
  int64_t max_cached_bytes_ ABSL_GUARDED_BY(mu_);
  std::multimap<size_t, void*> free_ ABSL_GUARDED_BY(mu_);  // size -> block
  absl::flat_hash_map<void*, size_t> in_use_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_CACHING_HOST_ALLOCATOR_H_
