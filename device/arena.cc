// ArenaAllocator: best-fit blocks over regions from a RegionSource.
#include "device/arena.h"

#include "core/byte_size.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace {

// The pool the calling thread allocates from, and on which arena.
thread_local const ArenaAllocator* scoped_arena = nullptr;
thread_local int scoped_pool = 0;

size_t RoundUp(size_t bytes) {
  if (bytes == 0) return kArenaAlignment;
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

}  // namespace


std::string AllocatorStats::DebugString() const {
  return absl::StrCat("in use ", FormatBytes(bytes_in_use), " (peak ",
                      FormatBytes(peak_bytes_in_use), "), reserved ",
                      FormatBytes(bytes_reserved), " of ", FormatBytes(limit),
                      " limit (peak ", FormatBytes(peak_bytes_reserved),
                      "), largest free block ", FormatBytes(largest_free_block),
                      ", ", num_allocations, " allocations in ", num_regions,
                      " regions");
}

absl::StatusOr<std::unique_ptr<ArenaAllocator>> ArenaAllocator::Create(
    ArenaOptions options, std::unique_ptr<RegionSource> source) {
  if (options.limit < static_cast<int64_t>(kArenaAlignment)) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.name, ": memory limit must be at least ",
                     kArenaAlignment, " bytes, got ", options.limit));
  }
  if (source == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.name, ": arena needs a region source"));
  }
  std::unique_ptr<ArenaAllocator> arena(
      new ArenaAllocator(std::move(options), std::move(source)));
  if (!arena->options_.allow_growth) {
    absl::MutexLock lock(&arena->mu_);
    const size_t whole = static_cast<size_t>(arena->options_.limit) /
                         kArenaAlignment * kArenaAlignment;
    absl::Status s = arena->AddRegionLocked(whole);
    if (!s.ok()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          arena->options_.name, ": cannot reserve the memory limit of ",
          FormatBytes(arena->options_.limit), " (", arena->options_.limit,
          " bytes) up front (allow_growth is false): ", s.message()));
    }
  }
  return arena;
}

ArenaAllocator::ArenaAllocator(ArenaOptions options,
                               std::unique_ptr<RegionSource> source)
    : options_(std::move(options)),
      source_(std::move(source)),
      host_accessible_(source_->host_accessible()) {}

ArenaAllocator::~ArenaAllocator() {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, region] : regions_) {
    source_->FreeRegion(reinterpret_cast<void*>(region.base), region.size);
  }
}

std::string ArenaAllocator::Name() const {
  return absl::StrCat("arena ", options_.name, " (", source_->Name(),
                      ", limit ", FormatBytes(options_.limit), ")");
}

absl::Status ArenaAllocator::AddRegionLocked(size_t bytes) {
  absl::StatusOr<void*> base = source_->AllocateRegion(bytes);
  if (!base.ok()) return base.status();
  const int id = next_region_id_++;
  const auto addr = reinterpret_cast<uintptr_t>(*base);
  regions_[id] = Region{addr, bytes};
  blocks_[addr] = Block{bytes, true, id, 0};
  free_.insert({bytes, addr});
  reserved_ += static_cast<int64_t>(bytes);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  return absl::OkStatus();
}

absl::Status ArenaAllocator::GrowLocked(size_t min_bytes) {
  // Called only here, with mu_ held; the annotation tells the analysis so.
  auto headroom = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int64_t h = options_.limit - reserved_;
    return h <= 0 ? size_t{0}
                  : static_cast<size_t>(h) / kArenaAlignment * kArenaAlignment;
  };
  if (headroom() < min_bytes) ReleaseUnusedLocked();
  const size_t room = headroom();
  if (room < min_bytes) {
    return absl::ResourceExhaustedError("the limit leaves no room");
  }
  size_t want = room;  // growth off: everything that is left, in one region
  if (options_.allow_growth) {
    want = std::max({min_bytes, options_.initial_region_bytes,
                     static_cast<size_t>(reserved_)});
    want = std::min(RoundUp(want), room);
  }
  absl::Status s = AddRegionLocked(want);
  if (!s.ok() && want > min_bytes) s = AddRegionLocked(min_bytes);
  return s;
}

uintptr_t ArenaAllocator::FindFreeLocked(size_t bytes) {
  auto it = free_.lower_bound({bytes, 0});
  return it == free_.end() ? 0 : it->second;
}

void* ArenaAllocator::TakeBlockLocked(uintptr_t addr, size_t bytes,
                                      size_t requested) {
  Block& block = blocks_[addr];
  // The arena's free block, or its pool's; the tail split off stays there.
  auto& free_set = FreeSetLocked(block.pool);
  free_set.erase({block.size, addr});
  if (block.size - bytes >= kArenaAlignment) {  // split off the tail
    const uintptr_t rest = addr + bytes;
    blocks_[rest] = Block{block.size - bytes, true, block.region, 0, block.pool};
    free_set.insert({block.size - bytes, rest});
    block.size = bytes;
  }
  block.free = false;
  block.requested = requested;
  in_use_ += static_cast<int64_t>(block.size);
  peak_in_use_ = std::max(peak_in_use_, in_use_);
  ++num_allocations_;
  return reinterpret_cast<void*>(addr);
}

absl::StatusOr<void*> ArenaAllocator::Allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(options_.limit)) {
    absl::MutexLock lock(&mu_);
    return absl::ResourceExhaustedError(OutOfMemoryMessage(bytes));
  }
  const size_t rounded = RoundUp(bytes);
  const int pool = ThreadPoolId();
  absl::MutexLock lock(&mu_);
  if (pool != 0 && pools_.count(pool) != 0) {
    return AllocateInPoolLocked(pool, bytes);
  }
  uintptr_t addr = FindFreeLocked(rounded);
  if (addr == 0) {
    absl::Status grown = GrowLocked(rounded);
    if (grown.ok()) addr = FindFreeLocked(rounded);
    if (addr == 0) {
      std::string message = OutOfMemoryMessage(bytes);
      if (!grown.ok() && !absl::IsResourceExhausted(grown)) {
        return absl::Status(grown.code(), message);
      }
      if (!grown.ok()) absl::StrAppend(&message, "; ", grown.message());
      return absl::ResourceExhaustedError(message);
    }
  }
  return TakeBlockLocked(addr, rounded, bytes);
}

void ArenaAllocator::Deallocate(void* ptr, size_t /*bytes*/) {
  const auto addr = reinterpret_cast<uintptr_t>(ptr);
  absl::MutexLock lock(&mu_);
  auto it = blocks_.find(addr);
  if (it == blocks_.end() || it->second.free) return;  // not ours: ignore
  in_use_ -= static_cast<int64_t>(it->second.size);
  --num_allocations_;
  FreeBlockLocked(it);
}

std::set<std::pair<size_t, uintptr_t>>& ArenaAllocator::FreeSetLocked(
    int pool) {
  return pool == 0 ? free_ : pools_[pool].free;
}

void ArenaAllocator::FreeBlockLocked(std::map<uintptr_t, Block>::iterator it) {
  const uintptr_t addr = it->first;
  Block& block = it->second;
  block.free = true;
  block.requested = 0;
  auto& free_set = FreeSetLocked(block.pool);
  auto joins = [&](const Block& other) {
    return other.free && other.region == block.region &&
           other.pool == block.pool;
  };
  // Coalesce with the next block, then with the previous one.
  auto next = std::next(it);
  if (next != blocks_.end() && joins(next->second) &&
      addr + block.size == next->first) {
    free_set.erase({next->second.size, next->first});
    block.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (joins(prev->second) && prev->first + prev->second.size == addr) {
      free_set.erase({prev->second.size, prev->first});
      prev->second.size += block.size;
      blocks_.erase(it);
      free_set.insert({prev->second.size, prev->first});
      return;
    }
  }
  free_set.insert({block.size, addr});
}

absl::StatusOr<void*> ArenaAllocator::AllocateInPoolLocked(int pool,
                                                           size_t bytes) {
  const size_t rounded = RoundUp(bytes);
  Pool& p = pools_[pool];
  auto fit = p.free.lower_bound({rounded, 0});
  if (fit != p.free.end()) {  // the pool's own memory, split like the arena's
    return TakeBlockLocked(fit->second, rounded, bytes);
  }
  // A block of the arena's, which the pool then holds.
  uintptr_t addr = FindFreeLocked(rounded);
  if (addr == 0) {
    absl::Status grown = GrowLocked(rounded);
    if (grown.ok()) addr = FindFreeLocked(rounded);
    if (addr == 0) {
      std::string message = OutOfMemoryMessage(bytes);
      if (!grown.ok()) absl::StrAppend(&message, "; ", grown.message());
      return absl::Status(grown.ok() || absl::IsResourceExhausted(grown)
                              ? absl::StatusCode::kResourceExhausted
                              : grown.code(),
                          message);
    }
  }
  void* ptr = TakeBlockLocked(addr, rounded, bytes);
  Block& block = blocks_[addr];
  block.pool = pool;
  p.bytes += static_cast<int64_t>(block.size);
  return ptr;
}

int ArenaAllocator::CreatePool() {
  absl::MutexLock lock(&mu_);
  const int id = next_pool_id_++;
  pools_[id];
  return id;
}

void ArenaAllocator::ReleasePool(int pool) {
  absl::MutexLock lock(&mu_);
  auto found = pools_.find(pool);
  if (found == pools_.end()) return;
  std::vector<uintptr_t> free_blocks;
  for (const auto& [size, addr] : found->second.free) free_blocks.push_back(addr);
  pools_.erase(found);
  // Every block becomes the arena's; the free ones are freed again, one by
  // one, so each coalesces only with blocks already in the arena's free set.
  for (auto& [addr, block] : blocks_) {
    if (block.pool != pool) continue;
    block.pool = 0;
    block.free = false;
  }
  for (uintptr_t addr : free_blocks) {
    auto it = blocks_.find(addr);
    if (it != blocks_.end()) FreeBlockLocked(it);  // else merged already
  }
}

int64_t ArenaAllocator::PoolBytes(int pool) const {
  absl::MutexLock lock(&mu_);
  auto found = pools_.find(pool);
  return found == pools_.end() ? 0 : found->second.bytes;
}

void ArenaAllocator::ResetPeak() {
  absl::MutexLock lock(&mu_);
  peak_in_use_ = in_use_;
}

int ArenaAllocator::ThreadPoolId() const {
  return scoped_arena == this ? scoped_pool : 0;
}

ArenaAllocator::PoolScope::PoolScope(ArenaAllocator* arena, int pool)
    : previous_arena_(scoped_arena), previous_pool_(scoped_pool) {
  if (arena == nullptr) return;
  scoped_arena = arena;
  scoped_pool = pool;
}

ArenaAllocator::PoolScope::~PoolScope() {
  scoped_arena = previous_arena_;
  scoped_pool = previous_pool_;
}

int64_t ArenaAllocator::ReleaseUnused() {
  absl::MutexLock lock(&mu_);
  return ReleaseUnusedLocked();
}

int64_t ArenaAllocator::ReleaseUnusedLocked() {
  int64_t released = 0;
  for (auto it = regions_.begin(); it != regions_.end();) {
    const Region region = it->second;
    auto block = blocks_.find(region.base);
    if (block == blocks_.end() || !block->second.free ||
        block->second.pool != 0 || block->second.size != region.size) {
      ++it;
      continue;
    }
    free_.erase({region.size, region.base});
    blocks_.erase(block);
    source_->FreeRegion(reinterpret_cast<void*>(region.base), region.size);
    reserved_ -= static_cast<int64_t>(region.size);
    released += static_cast<int64_t>(region.size);
    it = regions_.erase(it);
  }
  return released;
}

int64_t ArenaAllocator::LargestFreeLocked() const {
  return free_.empty() ? 0 : static_cast<int64_t>(free_.rbegin()->first);
}

std::string ArenaAllocator::OutOfMemoryMessage(size_t bytes) const {
  std::vector<size_t> sizes;
  for (const auto& [addr, block] : blocks_) {
    if (!block.free) sizes.push_back(block.requested);
  }
  const size_t shown = std::min<size_t>(sizes.size(), 5);
  std::partial_sort(sizes.begin(), sizes.begin() + shown, sizes.end(),
                    std::greater<>());
  sizes.resize(shown);
  std::string largest =
      sizes.empty() ? "none"
                    : absl::StrJoin(sizes, ", ", [](std::string* out, size_t s) {
                        out->append(FormatBytes(static_cast<int64_t>(s)));
                      });
  return absl::StrCat(
      options_.name, ": out of memory allocating ", bytes, " bytes (",
      FormatBytes(static_cast<int64_t>(bytes)), "): limit ", options_.limit,
      " bytes (", FormatBytes(options_.limit), "), in use ", in_use_,
      " bytes in ", num_allocations_, " allocations, reserved ", reserved_,
      " bytes, largest free block ", LargestFreeLocked(),
      " bytes; largest allocations: ", largest);
}

AllocatorStats ArenaAllocator::GetStats() const {
  absl::MutexLock lock(&mu_);
  AllocatorStats s;
  s.limit = options_.limit;
  s.bytes_in_use = in_use_;
  s.peak_bytes_in_use = peak_in_use_;
  s.bytes_reserved = reserved_;
  s.peak_bytes_reserved = peak_reserved_;
  s.largest_free_block = LargestFreeLocked();
  s.num_allocations = num_allocations_;
  s.num_regions = static_cast<int64_t>(regions_.size());
  for (const auto& [id, pool] : pools_) s.bytes_in_pools += pool.bytes;
  return s;
}

}  // namespace sluice
