// CachingHostAllocator: freed blocks are kept and reused (the base sees one
// allocation for repeated steps of one size), within the cap, and handed
// back on ReleaseCached or when the base runs out. CPU-only, over a
// counting allocator.
#include "device/caching_host_allocator.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "testing/counting_allocator.h"

namespace sluice::caching_host_allocator_test {
namespace {

using CountingBase = ::sluice::testing::CountingAllocator;

TEST(CachingHostAllocatorTest, StepsOfOneSizeReuseOneBlock) {
  CountingBase::Counts counts;
  CachingHostAllocator cache(std::make_unique<CountingBase>(&counts),
                             int64_t{1} << 30);
  for (int step = 0; step < 10; ++step) {
    absl::StatusOr<Tensor> t =
        Tensor::Create(DT_FLOAT, Shape({1000, 33}), &cache);
    ASSERT_TRUE(t.ok()) << t.status();
    std::memset(t->raw_data(), step, t->bytes());  // ASan: all of it is ours
  }
  EXPECT_EQ(counts.allocations, 1);
  EXPECT_EQ(counts.frees, 0);
  const CachingHostAllocator::Stats s = cache.GetStats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 9);
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_cached, 135168);  // 132,000 bytes rounded up to 4 KiB
  EXPECT_EQ(cache.ReleaseCached(), 135168);
  EXPECT_EQ(counts.frees, 1);
  EXPECT_EQ(counts.live_bytes, 0);
}

TEST(CachingHostAllocatorTest, BlocksBelowTheMinimumGoStraightToTheBase) {
  CountingBase::Counts counts;
  CachingHostAllocator cache(std::make_unique<CountingBase>(&counts),
                             int64_t{1} << 30, /*min_cached_bytes=*/64 << 10);
  for (int step = 0; step < 3; ++step) {
    void* small = *cache.Allocate(1000);       // neither rounded nor kept
    void* large = *cache.Allocate(100 << 10);  // kept
    cache.Deallocate(small, 1000);
    cache.Deallocate(large, 100 << 10);
  }
  EXPECT_EQ(counts.allocations, 3 + 1);
  EXPECT_EQ(counts.frees, 3);
  EXPECT_EQ(counts.live_bytes, 100 << 10);  // the one kept block
  const CachingHostAllocator::Stats s = cache.GetStats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.bytes_cached, 100 << 10);
}

TEST(CachingHostAllocatorTest, ABlockMoreThanTwiceTheRequestIsNotTaken) {
  CountingBase::Counts counts;
  CachingHostAllocator cache(std::make_unique<CountingBase>(&counts),
                             int64_t{1} << 30);
  void* big = *cache.Allocate(1 << 20);
  cache.Deallocate(big, 1 << 20);
  void* small = *cache.Allocate(100 << 10);  // 1 MiB > 2 x 100 KiB: new
  EXPECT_NE(small, big);
  void* half = *cache.Allocate(600 << 10);   // 1 MiB <= 2 x 600 KiB: reused
  EXPECT_EQ(half, big);
  EXPECT_EQ(counts.allocations, 2);
  cache.Deallocate(small, 100 << 10);
  cache.Deallocate(half, 600 << 10);
  EXPECT_EQ(cache.GetStats().bytes_in_use, 0);
}

TEST(CachingHostAllocatorTest, KeepsNoMoreThanItsCap) {
  CountingBase::Counts counts;
  CachingHostAllocator cache(std::make_unique<CountingBase>(&counts),
                             /*max_cached_bytes=*/3 * 4096);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(*cache.Allocate(4096));
  for (void* p : blocks) cache.Deallocate(p, 4096);
  EXPECT_EQ(cache.GetStats().bytes_cached, 3 * 4096);
  EXPECT_EQ(counts.frees, 2);  // the two past the cap went back at once
  EXPECT_EQ(counts.live_bytes, 3 * 4096);
}

TEST(CachingHostAllocatorTest, WhenTheBaseRunsOutKeptBlocksGoBackFirst) {
  CountingBase::Counts counts;
  CachingHostAllocator cache(
      std::make_unique<CountingBase>(&counts, /*limit=*/64 << 10),
      int64_t{1} << 30);
  void* a = *cache.Allocate(40 << 10);
  cache.Deallocate(a, 40 << 10);  // kept: 40 KiB of the base's 64
  // 100 KiB: the kept block is too small to take, and the base (64 KiB)
  // cannot give it even once the kept block is back: the base's error.
  absl::StatusOr<void*> b = cache.Allocate(100 << 10);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(counts.live_bytes, 0);  // the kept block was handed back
  void* d = *cache.Allocate(40 << 10);
  cache.Deallocate(d, 40 << 10);  // kept again
  // 48 KiB: 40 + 48 > 64 in the base, so only after the kept 40 KiB is
  // handed back does the base have room; the request then succeeds.
  absl::StatusOr<void*> c = cache.Allocate(48 << 10);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(cache.GetStats().bytes_cached, 0);
  cache.Deallocate(*c, 48 << 10);
}

TEST(CachingHostAllocatorTest, TheNameAndAccessAreTheBases) {
  CountingBase::Counts counts;
  CachingHostAllocator cache(std::make_unique<CountingBase>(&counts), 0);
  EXPECT_EQ(cache.Name(), "counting host memory");
  EXPECT_TRUE(cache.host_accessible());
  void* p = *cache.Allocate(0);  // a unique pointer even for 0 bytes
  void* q = *cache.Allocate(0);
  EXPECT_NE(p, q);
  cache.Deallocate(p, 0);  // cap 0: straight back
  cache.Deallocate(q, 0);
  EXPECT_EQ(counts.frees, 2);
}

}  // namespace
}  // namespace sluice::caching_host_allocator_test
