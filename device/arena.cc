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
  free_.erase({block.size, addr});
  if (block.size - bytes >= kArenaAlignment) {  // split off the tail
    const uintptr_t rest = addr + bytes;
    blocks_[rest] = Block{block.size - bytes, true, block.region, 0};
    free_.insert({block.size - bytes, rest});
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
  absl::MutexLock lock(&mu_);
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
  Block& block = it->second;
  in_use_ -= static_cast<int64_t>(block.size);
  --num_allocations_;
  block.free = true;
  block.requested = 0;
  // Coalesce with the next block, then with the previous one.
  auto next = std::next(it);
  if (next != blocks_.end() && next->second.free &&
      next->second.region == block.region && addr + block.size == next->first) {
    free_.erase({next->second.size, next->first});
    block.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free && prev->second.region == block.region &&
        prev->first + prev->second.size == addr) {
      free_.erase({prev->second.size, prev->first});
      prev->second.size += block.size;
      blocks_.erase(it);
      free_.insert({prev->second.size, prev->first});
      return;
    }
  }
  free_.insert({block.size, addr});
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
        block->second.size != region.size) {
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
  return s;
}

}  // namespace sluice
