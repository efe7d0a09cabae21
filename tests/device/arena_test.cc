// ArenaAllocator on the CPU, over a fake region source that counts what it
// hands out: limits, growth policy, out-of-memory errors, coalescing, and
// private pools.
#include "device/arena.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::arena_test {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

// Host memory regions, with a record of what is outstanding. Can be told to
// refuse regions larger than some size (a device that is itself full).
struct FakeRegionState {
  int64_t outstanding = 0;
  int64_t peak_outstanding = 0;
  int regions_allocated = 0;
  int regions_freed = 0;
  size_t refuse_above = SIZE_MAX;
};

class FakeRegionSource final : public RegionSource {
 public:
  explicit FakeRegionSource(FakeRegionState* state) : state_(state) {}
  std::string Name() const override { return "fake"; }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> AllocateRegion(size_t bytes) override {
    if (bytes > state_->refuse_above) {
      return absl::ResourceExhaustedError("fake device is full");
    }
    void* p = std::aligned_alloc(kArenaAlignment, bytes);
    if (p == nullptr) return absl::ResourceExhaustedError("host out");
    state_->outstanding += static_cast<int64_t>(bytes);
    state_->peak_outstanding =
        std::max(state_->peak_outstanding, state_->outstanding);
    ++state_->regions_allocated;
    return p;
  }
  void FreeRegion(void* ptr, size_t bytes) override {
    std::free(ptr);
    state_->outstanding -= static_cast<int64_t>(bytes);
    ++state_->regions_freed;
  }

 private:
  FakeRegionState* state_;  // not owned; outlives the source
};

std::unique_ptr<ArenaAllocator> MakeArena(FakeRegionState* state,
                                          int64_t limit, bool growth) {
  absl::StatusOr<std::unique_ptr<ArenaAllocator>> arena =
      ArenaAllocator::Create({.name = "/gpu:0",
                              .limit = limit,
                              .allow_growth = growth,
                              .initial_region_bytes = size_t{1} << 20},
                             std::make_unique<FakeRegionSource>(state));
  EXPECT_TRUE(arena.ok()) << arena.status();
  return arena.ok() ? *std::move(arena) : nullptr;
}

TEST(ArenaTest, LimitHoldsUnderManyAllocations) {
  for (bool growth : {false, true}) {
    FakeRegionState state;
    auto arena = MakeArena(&state, 64 * kMiB, growth);
    ASSERT_NE(arena, nullptr);
    std::mt19937 rng(42);
    std::uniform_int_distribution<size_t> size(1, 3 * kMiB);
    std::vector<std::pair<void*, size_t>> live;
    int failures = 0;
    for (int i = 0; i < 4000; ++i) {
      if (!live.empty() && rng() % 3 == 0) {
        size_t k = rng() % live.size();
        arena->Deallocate(live[k].first, live[k].second);
        live.erase(live.begin() + static_cast<long>(k));
        continue;
      }
      size_t bytes = size(rng);
      absl::StatusOr<void*> p = arena->Allocate(bytes);
      if (!p.ok()) {
        EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
        ++failures;
        continue;
      }
      EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % kArenaAlignment, 0u);
      live.push_back({*p, bytes});
      AllocatorStats s = arena->GetStats();
      ASSERT_LE(s.bytes_reserved, 64 * kMiB);
      ASSERT_LE(s.bytes_in_use, s.bytes_reserved);
    }
    EXPECT_GT(failures, 0) << "the pattern should hit the limit";
    EXPECT_LE(state.peak_outstanding, 64 * kMiB);
    for (auto& [p, bytes] : live) arena->Deallocate(p, bytes);
    EXPECT_EQ(arena->GetStats().bytes_in_use, 0);
  }
}

TEST(ArenaTest, BlocksDoNotOverlap) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 16 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  std::map<uintptr_t, size_t> spans;
  for (size_t bytes : {1, 255, 256, 257, 4096, 100000, 1 << 20}) {
    absl::StatusOr<void*> p = arena->Allocate(bytes);
    ASSERT_TRUE(p.ok()) << p.status();
    std::memset(*p, 0xab, bytes);
    spans[reinterpret_cast<uintptr_t>(*p)] = bytes;
  }
  uintptr_t end = 0;
  for (auto& [start, bytes] : spans) {
    EXPECT_GE(start, end);
    end = start + bytes;
  }
}

TEST(ArenaTest, GrowthOffReservesTheLimitUpFront) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 32 * kMiB, /*growth=*/false);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(state.outstanding, 32 * kMiB);
  AllocatorStats s = arena->GetStats();
  EXPECT_EQ(s.bytes_reserved, 32 * kMiB);
  EXPECT_EQ(s.largest_free_block, 32 * kMiB);
  EXPECT_EQ(s.bytes_in_use, 0);
  // Allocating does not reserve more.
  ASSERT_TRUE(arena->Allocate(kMiB).ok());
  EXPECT_EQ(state.regions_allocated, 1);
}

TEST(ArenaTest, GrowthOnReservesLittle) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 1024 * kMiB, /*growth=*/true);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(state.outstanding, 0);
  absl::StatusOr<void*> p = arena->Allocate(1000);
  ASSERT_TRUE(p.ok());
  EXPECT_LE(state.outstanding, 2 * kMiB);
  EXPECT_EQ(arena->GetStats().bytes_reserved, state.outstanding);
  arena->Deallocate(*p, 1000);
}

TEST(ArenaTest, GrowthOffFailsWhenTheDeviceCannotHoldTheLimit) {
  FakeRegionState state;
  state.refuse_above = 8 * kMiB;
  absl::StatusOr<std::unique_ptr<ArenaAllocator>> arena =
      ArenaAllocator::Create({.name = "/gpu:3", .limit = 16 * kMiB},
                             std::make_unique<FakeRegionSource>(&state));
  ASSERT_FALSE(arena.ok());
  EXPECT_EQ(arena.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(arena.status().message(), HasSubstr("/gpu:3"));
  EXPECT_THAT(arena.status().message(), HasSubstr("allow_growth"));
}

TEST(ArenaTest, RejectsATinyLimit) {
  FakeRegionState state;
  absl::StatusOr<std::unique_ptr<ArenaAllocator>> arena =
      ArenaAllocator::Create({.name = "/gpu:0", .limit = 0},
                             std::make_unique<FakeRegionSource>(&state));
  EXPECT_EQ(arena.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArenaTest, OutOfMemoryIsAnErrorAndTheNextAllocationSucceedsAfterFrees) {
  for (bool growth : {false, true}) {
    FakeRegionState state;
    auto arena = MakeArena(&state, 8 * kMiB, growth);
    ASSERT_NE(arena, nullptr);
    absl::StatusOr<void*> a = arena->Allocate(5 * kMiB);
    ASSERT_TRUE(a.ok()) << a.status();
    absl::StatusOr<void*> b = arena->Allocate(4 * kMiB);
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(b.status().message(), HasSubstr("/gpu:0"));
    EXPECT_THAT(b.status().message(), HasSubstr("4194304 bytes"));
    EXPECT_THAT(b.status().message(), HasSubstr("limit 8388608 bytes"));
    EXPECT_THAT(b.status().message(), HasSubstr("in use 5242880 bytes"));
    EXPECT_THAT(b.status().message(), HasSubstr("largest allocations: 5.0 MiB"));
    EXPECT_LE(arena->GetStats().bytes_reserved, 8 * kMiB);
    arena->Deallocate(*a, 5 * kMiB);
    absl::StatusOr<void*> c = arena->Allocate(4 * kMiB);
    EXPECT_TRUE(c.ok()) << c.status();
    arena->Deallocate(*c, 4 * kMiB);
  }
}

TEST(ArenaTest, MoreThanTheLimitFailsAtOnce) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  absl::StatusOr<void*> p = arena->Allocate(9 * kMiB);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(state.outstanding, 0);
}

TEST(ArenaTest, FreeHeavyPatternCoalescesBackToOneBlock) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 16 * kMiB, /*growth=*/false);
  ASSERT_NE(arena, nullptr);
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    absl::StatusOr<void*> p = arena->Allocate(256 * 1024);
    ASSERT_TRUE(p.ok());
    blocks.push_back(*p);
  }
  // Free every other block: the arena is fragmented into 256 KiB holes.
  for (int i = 0; i < 64; i += 2) arena->Deallocate(blocks[i], 256 * 1024);
  EXPECT_EQ(arena->GetStats().largest_free_block, 256 * 1024);
  EXPECT_FALSE(arena->Allocate(512 * 1024).ok());
  // Free the rest, in a scrambled order: neighbours merge both ways.
  std::vector<int> order;
  for (int i = 1; i < 64; i += 2) order.push_back(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (int i : order) arena->Deallocate(blocks[i], 256 * 1024);
  AllocatorStats s = arena->GetStats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.largest_free_block, 16 * kMiB);
  absl::StatusOr<void*> whole = arena->Allocate(16 * kMiB);
  EXPECT_TRUE(whole.ok()) << whole.status();
}

TEST(ArenaTest, ReleaseUnusedHandsFreeRegionsBack) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 64 * kMiB, /*growth=*/true);
  ASSERT_NE(arena, nullptr);
  absl::StatusOr<void*> a = arena->Allocate(3 * kMiB);
  absl::StatusOr<void*> b = arena->Allocate(20 * kMiB);
  ASSERT_TRUE(a.ok() && b.ok());
  const int64_t before = state.outstanding;
  arena->Deallocate(*b, 20 * kMiB);
  const int64_t released = arena->ReleaseUnused();
  EXPECT_GT(released, 0);
  EXPECT_EQ(state.outstanding, before - released);
  EXPECT_EQ(arena->GetStats().bytes_reserved, state.outstanding);
  // The region holding `a` stays.
  EXPECT_GT(state.outstanding, 0);
  arena->Deallocate(*a, 3 * kMiB);
  arena->ReleaseUnused();
  EXPECT_EQ(state.outstanding, 0);
  // Still usable afterwards.
  absl::StatusOr<void*> c = arena->Allocate(kMiB);
  EXPECT_TRUE(c.ok());
  arena->Deallocate(*c, kMiB);
}

TEST(ArenaTest, GrowthOffReservesAgainAfterRelease) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, /*growth=*/false);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->ReleaseUnused(), 8 * kMiB);
  EXPECT_EQ(state.outstanding, 0);
  absl::StatusOr<void*> p = arena->Allocate(kMiB);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(state.outstanding, 8 * kMiB);
  arena->Deallocate(*p, kMiB);
}

TEST(ArenaTest, GrowthMakesRoomByReleasingFreeRegions) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, /*growth=*/true);
  ASSERT_NE(arena, nullptr);
  // Two regions that together fill the limit, then freed.
  absl::StatusOr<void*> a = arena->Allocate(3 * kMiB);
  absl::StatusOr<void*> b = arena->Allocate(5 * kMiB);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  arena->Deallocate(*a, 3 * kMiB);
  arena->Deallocate(*b, 5 * kMiB);
  // Neither region alone holds 6 MiB, but the arena may release both.
  absl::StatusOr<void*> c = arena->Allocate(6 * kMiB);
  EXPECT_TRUE(c.ok()) << c.status();
  EXPECT_LE(state.outstanding, 8 * kMiB);
}

TEST(ArenaTest, StatsTrackPeak) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  absl::StatusOr<void*> a = arena->Allocate(1000);
  absl::StatusOr<void*> b = arena->Allocate(3000);
  arena->Deallocate(*a, 1000);
  AllocatorStats s = arena->GetStats();
  EXPECT_EQ(s.bytes_in_use, 3072);
  EXPECT_EQ(s.peak_bytes_in_use, 1024 + 3072);
  EXPECT_EQ(s.num_allocations, 1);
  EXPECT_THAT(s.DebugString(), HasSubstr("in use 3.0 KiB"));
  arena->Deallocate(*b, 3000);
}

TEST(ArenaTest, ResetPeakStartsFromWhatIsInUse) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  absl::StatusOr<void*> a = arena->Allocate(4096);
  absl::StatusOr<void*> b = arena->Allocate(4096);
  arena->Deallocate(*b, 4096);
  EXPECT_EQ(arena->GetStats().peak_bytes_in_use, 8192);
  arena->ResetPeak();
  EXPECT_EQ(arena->GetStats().peak_bytes_in_use, 4096);
  arena->Deallocate(*a, 4096);
}

// A pool's freed blocks are reused within the pool, by lifetime, and by
// nothing outside it until the pool is released.
TEST(ArenaPoolTest, FreedPoolMemoryIsReusedOnlyInThePool) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  const int pool = arena->CreatePool();
  EXPECT_GT(pool, 0);
  void* first = nullptr;
  {
    ArenaAllocator::PoolScope scope(arena.get(), pool);
    absl::StatusOr<void*> a = arena->Allocate(64 * 1024);
    ASSERT_TRUE(a.ok()) << a.status();
    first = *a;
    arena->Deallocate(*a, 64 * 1024);  // back to the pool
    absl::StatusOr<void*> b = arena->Allocate(32 * 1024);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*b, first) << "a later allocation in the pool reuses its memory";
    arena->Deallocate(*b, 32 * 1024);
  }
  EXPECT_EQ(arena->PoolBytes(pool), 64 * 1024);
  AllocatorStats stats = arena->GetStats();
  EXPECT_EQ(stats.bytes_in_pools, 64 * 1024);
  EXPECT_EQ(stats.bytes_in_use, 0);
  // Outside the scope the pool's free memory is not handed out.
  std::vector<void*> outside;
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<void*> p = arena->Allocate(8 * 1024);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(static_cast<char*>(*p) + 8 * 1024 <= first ||
                static_cast<char*>(*p) >= static_cast<char*>(first) + 64 * 1024)
        << "allocation " << i << " lies in the pool's memory";
    outside.push_back(*p);
  }
  for (void* p : outside) arena->Deallocate(p, 8 * 1024);
  // Released, the pool's memory is the arena's again.
  arena->ReleasePool(pool);
  EXPECT_EQ(arena->PoolBytes(pool), 0);
  EXPECT_EQ(arena->GetStats().bytes_in_pools, 0);
  absl::StatusOr<void*> big = arena->Allocate(size_t{1} << 20);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(arena->GetStats().num_regions, 1) << "the region coalesced whole";
  arena->Deallocate(*big, size_t{1} << 20);
}

// A block still live when its pool is released goes to the arena when freed.
TEST(ArenaPoolTest, LiveBlocksOutlastTheirPool) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  const int pool = arena->CreatePool();
  absl::StatusOr<void*> live;
  {
    ArenaAllocator::PoolScope scope(arena.get(), pool);
    live = arena->Allocate(4096);
    ASSERT_TRUE(live.ok());
  }
  arena->ReleasePool(pool);
  EXPECT_EQ(arena->GetStats().bytes_in_use, 4096);
  arena->Deallocate(*live, 4096);
  AllocatorStats stats = arena->GetStats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.largest_free_block, stats.bytes_reserved);
  EXPECT_EQ(arena->ReleaseUnused(), stats.bytes_reserved);
}

// Pool blocks are never handed back to the source, even when a whole
// region is free in the pool.
TEST(ArenaPoolTest, ReleaseUnusedKeepsPoolRegions) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 8 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  const int pool = arena->CreatePool();
  {
    ArenaAllocator::PoolScope scope(arena.get(), pool);
    absl::StatusOr<void*> a = arena->Allocate(size_t{1} << 20);  // the region
    ASSERT_TRUE(a.ok());
    arena->Deallocate(*a, size_t{1} << 20);
  }
  EXPECT_EQ(arena->ReleaseUnused(), 0);
  EXPECT_EQ(arena->PoolBytes(pool), 1 << 20);
  arena->ReleasePool(pool);
  EXPECT_EQ(arena->ReleaseUnused(), 1 << 20);
}

// The scope routes only the calling thread, and only on its own arena;
// scopes nest.
TEST(ArenaPoolTest, ScopeIsPerThreadAndPerArena) {
  FakeRegionState state, other_state;
  auto arena = MakeArena(&state, 8 * kMiB, true);
  auto other = MakeArena(&other_state, 8 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  ASSERT_NE(other, nullptr);
  const int outer = arena->CreatePool();
  const int inner = arena->CreatePool();
  ArenaAllocator::PoolScope scope(arena.get(), outer);
  absl::StatusOr<void*> a = arena->Allocate(4096);
  {
    ArenaAllocator::PoolScope nested(arena.get(), inner);
    absl::StatusOr<void*> b = arena->Allocate(8192);
    EXPECT_EQ(arena->PoolBytes(inner), 8192);
    arena->Deallocate(*b, 8192);
  }
  absl::StatusOr<void*> c = other->Allocate(4096);  // another arena: no pool
  std::thread t([&] {
    absl::StatusOr<void*> d = arena->Allocate(4096);  // another thread
    arena->Deallocate(*d, 4096);
  });
  t.join();
  EXPECT_EQ(arena->PoolBytes(outer), 4096);
  EXPECT_EQ(arena->GetStats().bytes_in_pools, 4096 + 8192);
  EXPECT_EQ(other->GetStats().bytes_in_pools, 0);
  other->Deallocate(*c, 4096);
  arena->Deallocate(*a, 4096);
  arena->ReleasePool(outer);
  arena->ReleasePool(inner);
  EXPECT_EQ(arena->GetStats().bytes_in_pools, 0);
}

// Many pools and the arena interleaved: blocks never overlap and every byte
// comes back.
TEST(ArenaPoolTest, InterleavedPoolsNeverOverlap) {
  FakeRegionState state;
  auto arena = MakeArena(&state, 64 * kMiB, true);
  ASSERT_NE(arena, nullptr);
  std::mt19937 rng(7);
  const int pools[3] = {0, arena->CreatePool(), arena->CreatePool()};
  std::map<char*, size_t> live;  // start -> bytes
  for (int i = 0; i < 3000; ++i) {
    const int pool = pools[rng() % 3];
    ArenaAllocator::PoolScope scope(pool == 0 ? nullptr : arena.get(), pool);
    if (!live.empty() && rng() % 2 == 0) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      arena->Deallocate(it->first, it->second);
      live.erase(it);
      continue;
    }
    const size_t bytes = 1 + rng() % (256 * 1024);
    absl::StatusOr<void*> p = arena->Allocate(bytes);
    ASSERT_TRUE(p.ok()) << p.status();
    char* start = static_cast<char*>(*p);
    auto next = live.lower_bound(start);
    if (next != live.end()) {
      ASSERT_LE(start + bytes, next->first);
    }
    if (next != live.begin()) {
      auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second, start);
    }
    std::memset(start, 1, bytes);
    live[start] = bytes;
  }
  for (const auto& [p, bytes] : live) arena->Deallocate(p, bytes);
  arena->ReleasePool(pools[1]);
  arena->ReleasePool(pools[2]);
  AllocatorStats stats = arena->GetStats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.bytes_in_pools, 0);
  EXPECT_EQ(arena->ReleaseUnused(), stats.bytes_reserved);
}

}  // namespace
}  // namespace sluice::arena_test
