// MemoryTracker: a range-add / range-max segment tree over run positions.
#include "placer/memory_tracker.h"

#include <algorithm>

#include "placer/device_spec.h"

namespace sluice {

MemoryTracker::MemoryTracker(int positions, int64_t budget)
    : positions_(std::max(1, positions)), budget_(budget) {}

void MemoryTracker::Allocate() {
  while (size_ < positions_) size_ *= 2;
  max_.assign(2 * static_cast<size_t>(size_), 0);
  add_.assign(2 * static_cast<size_t>(size_), 0);
  allocated_ = true;
}

void MemoryTracker::Add(int node, int lo, int hi, int first, int last,
                        int64_t bytes) {
  if (last < lo || hi < first) return;
  if (first <= lo && hi <= last) {
    max_[node] += bytes;
    add_[node] += bytes;
    return;
  }
  int mid = (lo + hi) / 2;
  Add(2 * node, lo, mid, first, last, bytes);
  Add(2 * node + 1, mid + 1, hi, first, last, bytes);
  max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
}

int64_t MemoryTracker::Max(int node, int lo, int hi, int first,
                           int last) const {
  if (first <= lo && hi <= last) return max_[node];
  int mid = (lo + hi) / 2;
  int64_t best = INT64_MIN;
  if (first <= mid) best = Max(2 * node, lo, mid, first, last);
  if (last > mid) best = std::max(best, Max(2 * node + 1, mid + 1, hi, first, last));
  return best + add_[node];
}

int64_t MemoryTracker::PeakIn(int first, int last) const {
  if (!allocated_) return 0;
  first = std::max(first, 0);
  last = std::min(last, size_ - 1);
  if (first > last) return 0;
  return Max(1, 0, size_ - 1, first, last);
}

void MemoryTracker::AddActivation(int first, int last, int64_t bytes) {
  if (bytes == 0 || first > last) return;
  if (!allocated_) Allocate();
  Add(1, 0, size_ - 1, first, last, bytes);
}

bool MemoryTracker::Fits(int64_t new_weights,
                         absl::Span<const LiveInterval> intervals) {
  if (budget_ == kUnlimitedBudget) return true;
  const int64_t room = budget_ - weights_ - new_weights;
  if (room < 0) return false;
  // Cheap bound first: everything new at once over the union of intervals.
  int64_t total = 0;
  int first = positions_, last = -1;
  for (const LiveInterval& iv : intervals) {
    total += iv.bytes;
    first = std::min(first, iv.first);
    last = std::max(last, iv.last);
  }
  if (total == 0) return peak_activation_bytes() <= room;
  if (std::max(peak_activation_bytes(), PeakIn(first, last) + total) <= room) {
    return true;
  }
  if (intervals.size() == 1) return false;  // the bound was exact
  // Exact: apply, read the peak, undo.
  for (const LiveInterval& iv : intervals) {
    AddActivation(iv.first, iv.last, iv.bytes);
  }
  bool fits = peak_activation_bytes() <= room;
  for (const LiveInterval& iv : intervals) {
    AddActivation(iv.first, iv.last, -iv.bytes);
  }
  return fits;
}

}  // namespace sluice
