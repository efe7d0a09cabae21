// CachedCpuAllocator (cpu_memory.h): CpuAllocator() under a cache.
#include "device/cpu_memory.h"

#include <memory>
#include <string>

#include "absl/base/config.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace sluice {
namespace {

// CpuAllocator() as an allocator the cache can own.
class ProcessCpuAllocator final : public Allocator {
 public:
  std::string Name() const override { return CpuAllocator()->Name(); }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    return CpuAllocator()->Allocate(bytes);
  }
  void Deallocate(void* ptr, size_t bytes) override {
    CpuAllocator()->Deallocate(ptr, bytes);
  }
};

#if defined(ABSL_HAVE_ADDRESS_SANITIZER)
constexpr int64_t kMaxCachedBytes = 0;
#else
constexpr int64_t kMaxCachedBytes = int64_t{1} << 30;
#endif

// Nothing is kept until a session says it uses the cache.
CachingHostAllocator* Cache() {
  static CachingHostAllocator* const cache = new CachingHostAllocator(
      std::make_unique<ProcessCpuAllocator>(), /*max_cached_bytes=*/0,
      kMinCachedCpuBlock);
  return cache;
}

struct Users {
  absl::Mutex mu;
  int count ABSL_GUARDED_BY(mu) = 0;
};

Users& CacheUsers() {
  static Users* const users = new Users();
  return *users;
}

}  // namespace

CpuMemoryUse::CpuMemoryUse() {
  Users& u = CacheUsers();
  absl::MutexLock lock(&u.mu);
  if (u.count++ == 0) Cache()->SetMaxCachedBytes(kMaxCachedBytes);
}

CpuMemoryUse::~CpuMemoryUse() {
  Users& u = CacheUsers();
  absl::MutexLock lock(&u.mu);
  if (--u.count == 0) {
    Cache()->SetMaxCachedBytes(0);
    Cache()->ReleaseCached();
  }
}

Allocator* CachedCpuAllocator() { return Cache(); }

int64_t ReleaseCachedCpuMemory() { return Cache()->ReleaseCached(); }

CachingHostAllocator::Stats CachedCpuMemoryStats() { return Cache()->GetStats(); }

}  // namespace sluice
