// ArenaAllocator: a best-fit arena over large regions obtained from a
// RegionSource (cudaMalloc on a GPU, plain host memory in tests). Blocks are
// 256-byte aligned, split on allocation and coalesced with free neighbours
// on deallocation. The bytes reserved from the source never exceed the limit:
// with growth off the whole limit is reserved at creation; with growth on
// regions are reserved on demand (doubling, up to the limit).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ArenaAllocator> arena,
//                    ArenaAllocator::Create({.name = "/gpu:0",
//                                            .limit = 8 << 30,
//                                            .allow_growth = true},
//                                           std::move(cuda_regions)));
//   ASSIGN_OR_RETURN(void* p, arena->Allocate(1 << 20));
//   arena->Deallocate(p, 1 << 20);
//   arena->ReleaseUnused();   // hands fully free regions back to the source
//
// Private pools (what a GPU step replayed as a CUDA graph allocates from:
// executor/gpu_graph_runner.h). While a PoolScope is open on a thread, the
// allocations that thread makes on the arena come from the pool: from the
// pool's own free blocks first, else from the arena's (which then belong to
// the pool). A pool block that is freed goes back to the pool only, so its
// memory is reused by later allocations in the same pool and by nothing
// else until ReleasePool. That is what lets a recorded step's tensors share
// memory by lifetime (a replay writes the same addresses again) while other
// steps allocate around them:
//
//   const int pool = arena->CreatePool();
//   { ArenaAllocator::PoolScope scope(arena, pool); ... record ... }
//   ... replay ...
//   arena->ReleasePool(pool);  // free blocks return to the arena now, live
//                              // ones when they are freed
//
// Thread-safe: every method takes the arena's mutex (the region source is
// only called under it).
#ifndef SLUICE_DEVICE_ARENA_H_
#define SLUICE_DEVICE_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/byte_size.h"
#include "absl/synchronization/mutex.h"
#include "core/allocator.h"

namespace sluice {

inline constexpr size_t kArenaAlignment = 256;

// Where an arena's regions come from. Implementations need not be
// thread-safe: the arena serialises calls.
class RegionSource {
 public:
  virtual ~RegionSource() = default;
  // "cudaMalloc on GPU 0". Used in messages.
  virtual std::string Name() const = 0;
  // A region of exactly `bytes`, aligned to at least kArenaAlignment.
  // RESOURCE_EXHAUSTED when the underlying memory is out.
  virtual absl::StatusOr<void*> AllocateRegion(size_t bytes) = 0;
  // REQUIRES: `ptr` came from AllocateRegion(bytes) and is not yet freed.
  virtual void FreeRegion(void* ptr, size_t bytes) = 0;
  // Whether the host can touch region memory directly.
  virtual bool host_accessible() const { return false; }
};

struct ArenaOptions {
  std::string name;  // the device, "/gpu:0"; used in messages
  // Bytes the arena may reserve from its source, at most. > 0.
  int64_t limit = 0;
  // false: reserve the whole limit in Create; true: reserve on demand.
  bool allow_growth = false;
  // With growth on: the smallest region reserved (regions then double).
  size_t initial_region_bytes = size_t{2} << 20;
};

struct AllocatorStats {
  int64_t limit = 0;
  int64_t bytes_in_use = 0;        // allocated blocks, rounded to 256 bytes
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_reserved = 0;      // regions held from the source
  int64_t peak_bytes_reserved = 0;
  int64_t largest_free_block = 0;
  int64_t num_allocations = 0;     // live allocations
  int64_t num_regions = 0;
  // Bytes private pools hold (their live blocks and their free ones); the
  // free ones are not in largest_free_block.
  int64_t bytes_in_pools = 0;
  // "in use 1.5 MiB (peak 2.0 MiB), reserved 8.0 MiB of 8.0 MiB limit,
  //  largest free block 6.5 MiB, 3 allocations in 1 region".
  std::string DebugString() const;
};

class ArenaAllocator final : public Allocator {
 public:
  // With growth off, reserves the whole limit now (RESOURCE_EXHAUSTED when
  // the source cannot supply it). INVALID_ARGUMENT for a limit below 256.
  static absl::StatusOr<std::unique_ptr<ArenaAllocator>> Create(
      ArenaOptions options, std::unique_ptr<RegionSource> source);
  // Returns every region to the source. REQUIRES: no live allocations (a
  // leak is tolerated: its region is still freed).
  ~ArenaAllocator() override;

  std::string Name() const override;
  bool host_accessible() const override { return host_accessible_; }
  // Best fit among free blocks; grows when none fits and the limit allows.
  // RESOURCE_EXHAUSTED names the bytes asked, the limit, the bytes in use,
  // the largest free block and the largest live allocations.
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;

  // Frees every region that holds no allocation; returns the bytes freed.
  // With growth off, the arena reserves again (the rest of its limit, in one
  // region) the next time it needs memory.
  int64_t ReleaseUnused();

  AllocatorStats GetStats() const;
  // Starts a new peak: peak_bytes_in_use becomes bytes_in_use.
  void ResetPeak();

  // A new private pool's id (> 0); see the file comment.
  int CreatePool();
  // Hands the pool's free blocks back to the arena; its live blocks go back
  // when they are freed. Unknown ids are ignored.
  void ReleasePool(int pool);
  // Bytes of the blocks the pool holds, live and free.
  int64_t PoolBytes(int pool) const;

  // Routes the calling thread's allocations on `arena` to `pool` while it
  // lives (scopes nest; the innermost wins). `arena` may be null: no effect.
  class PoolScope {
   public:
    PoolScope(ArenaAllocator* arena, int pool);
    ~PoolScope();
    PoolScope(const PoolScope&) = delete;
    PoolScope& operator=(const PoolScope&) = delete;

   private:
    const ArenaAllocator* const previous_arena_;
    const int previous_pool_;
  };
  const ArenaOptions& options() const { return options_; }

 private:
  struct Block {
    size_t size = 0;
    bool free = true;
    int region = 0;         // id of the region the block lies in
    size_t requested = 0;   // bytes asked for, when allocated
    int pool = 0;           // the private pool that holds it; 0: none
  };
  struct Pool {
    std::set<std::pair<size_t, uintptr_t>> free;  // (size, address)
    int64_t bytes = 0;  // of its blocks, live and free
  };
  struct Region {
    uintptr_t base = 0;
    size_t size = 0;
  };

  ArenaAllocator(ArenaOptions options, std::unique_ptr<RegionSource> source);

  absl::Status GrowLocked(size_t min_bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AddRegionLocked(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t ReleaseUnusedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Best-fit free block of at least `bytes`; 0 when none.
  uintptr_t FindFreeLocked(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void* TakeBlockLocked(uintptr_t addr, size_t bytes, size_t requested)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Allocate within `pool`; a pool block, or an arena block it takes.
  absl::StatusOr<void*> AllocateInPoolLocked(int pool, size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks the live block at `it` free: in the arena's free set when it has
  // no pool, else in its pool's, coalescing with free neighbours of the same
  // region and pool.
  void FreeBlockLocked(std::map<uintptr_t, Block>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The free set a block of `pool` belongs to.
  std::set<std::pair<size_t, uintptr_t>>& FreeSetLocked(int pool)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pool this thread allocates from on this arena (0: none).
  int ThreadPoolId() const;
  std::string OutOfMemoryMessage(size_t bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t LargestFreeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Fixed at construction.
  const ArenaOptions options_;
  const std::unique_ptr<RegionSource> source_;
  const bool host_accessible_;

  mutable absl::Mutex mu_;
  std::map<uintptr_t, Block> blocks_ ABSL_GUARDED_BY(mu_);  // by address
  std::set<std::pair<size_t, uintptr_t>> free_ ABSL_GUARDED_BY(mu_);
  std::map<int, Region> regions_ ABSL_GUARDED_BY(mu_);
  int next_region_id_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reserved_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_reserved_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t num_allocations_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int, Pool> pools_ ABSL_GUARDED_BY(mu_);
  int next_pool_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_ARENA_H_
