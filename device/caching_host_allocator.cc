#include "device/caching_host_allocator.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace sluice {
namespace {

constexpr size_t kGranule = 4096;

size_t RoundUpToGranule(size_t bytes) {
  const size_t n = std::max<size_t>(bytes, 1);
  return (n + kGranule - 1) / kGranule * kGranule;
}

}  // namespace

CachingHostAllocator::CachingHostAllocator(std::unique_ptr<Allocator> base,
                                           int64_t max_cached_bytes,
                                           size_t min_cached_bytes)
    : base_(std::move(base)),
      min_cached_bytes_(min_cached_bytes),
      max_cached_bytes_(max_cached_bytes) {}

CachingHostAllocator::~CachingHostAllocator() { ReleaseCached(); }

absl::StatusOr<void*> CachingHostAllocator::Allocate(size_t bytes) {
  if (bytes < min_cached_bytes_) return base_->Allocate(bytes);
  const size_t size = RoundUpToGranule(bytes);
  {
    absl::MutexLock lock(&mu_);
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first / 2 <= size) {
      void* p = it->second;
      const size_t block = it->first;
      free_.erase(it);
      in_use_[p] = block;
      stats_.bytes_cached -= static_cast<int64_t>(block);
      stats_.bytes_in_use += static_cast<int64_t>(block);
      ++stats_.hits;
      return p;
    }
  }
  absl::StatusOr<void*> p = base_->Allocate(size);
  if (!p.ok()) {
    // Kept blocks of other sizes may be what the base lacks: give them
    // back and try once more.
    if (ReleaseCached() == 0) return p.status();
    p = base_->Allocate(size);
    if (!p.ok()) return p.status();
  }
  absl::MutexLock lock(&mu_);
  in_use_[*p] = size;
  stats_.bytes_in_use += static_cast<int64_t>(size);
  ++stats_.misses;
  return *p;
}

void CachingHostAllocator::Deallocate(void* ptr, size_t bytes) {
  if (bytes < min_cached_bytes_) {
    base_->Deallocate(ptr, bytes);
    return;
  }
  size_t block = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = in_use_.find(ptr);
    if (it == in_use_.end()) return;  // not ours: a caller's bug, ignored
    block = it->second;
    in_use_.erase(it);
    stats_.bytes_in_use -= static_cast<int64_t>(block);
    if (stats_.bytes_cached + static_cast<int64_t>(block) <= max_cached_bytes_) {
      // Before the blocks of its size: the next request of that size takes
      // the one freed last, still in the cache, as the C library's own
      // free lists would.
      free_.emplace_hint(free_.lower_bound(block), block, ptr);
      stats_.bytes_cached += static_cast<int64_t>(block);
      return;
    }
  }
  base_->Deallocate(ptr, block);
}

int64_t CachingHostAllocator::ReleaseCached() {
  std::multimap<size_t, void*> doomed;
  {
    absl::MutexLock lock(&mu_);
    doomed.swap(free_);
    stats_.bytes_cached = 0;
  }
  int64_t bytes = 0;
  for (const auto& [size, p] : doomed) {
    base_->Deallocate(p, size);
    bytes += static_cast<int64_t>(size);
  }
  return bytes;
}

void CachingHostAllocator::SetMaxCachedBytes(int64_t max_cached_bytes) {
  absl::MutexLock lock(&mu_);
  max_cached_bytes_ = max_cached_bytes;
}

CachingHostAllocator::Stats CachingHostAllocator::GetStats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace sluice
