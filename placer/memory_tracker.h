// MemoryTracker: one device's memory over a step, as the placer fills it:
// weights (resident for the whole step) plus activations, each live over an
// interval of run-order positions [first, last]. Answers "what is the peak
// over these positions" in O(log n), so the placer can check a budget before
// each placement and never exceed it.
//
//   MemoryTracker m(/*positions=*/n + 1, /*budget=*/4 << 30);
//   m.AddActivation(3, 7, 1024);         // live from position 3 through 7
//   m.AddWeights(1 << 20);
//   bool ok = m.Fits(/*new_weights=*/0, {{5, 9, 4096}});
//
// Thread-compatible.
#ifndef SLUICE_PLACER_MEMORY_TRACKER_H_
#define SLUICE_PLACER_MEMORY_TRACKER_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace sluice {

// Bytes live on a device from position `first` through `last` inclusive.
struct LiveInterval {
  int first = 0;
  int last = 0;
  int64_t bytes = 0;
};

class MemoryTracker {
 public:
  // Positions are 0 .. positions-1. `budget` bounds weights + peak
  // activations (kUnlimitedBudget: no bound).
  MemoryTracker(int positions, int64_t budget);

  int64_t budget() const { return budget_; }
  int64_t weight_bytes() const { return weights_; }
  // Peak of live activations over the whole step.
  int64_t peak_activation_bytes() const {
    return allocated_ ? max_[1] : 0;
  }
  // Highest activation level over positions [first, last].
  int64_t PeakIn(int first, int last) const;

  // Whether adding `new_weights` and `intervals` keeps weights + peak within
  // the budget. Exact; the tree is unchanged afterwards.
  bool Fits(int64_t new_weights, absl::Span<const LiveInterval> intervals);

  // REQUIRES: Fits(...) for the same arguments (checked by the caller).
  void AddWeights(int64_t bytes) { weights_ += bytes; }
  // `bytes` may be negative to end an interval early.
  void AddActivation(int first, int last, int64_t bytes);

 private:
  void Allocate();
  void Add(int node, int lo, int hi, int first, int last, int64_t bytes);
  int64_t Max(int node, int lo, int hi, int first, int last) const;

  const int positions_;
  const int64_t budget_;
  int64_t weights_ = 0;
  int size_ = 1;  // leaves, a power of two
  // Range-add / range-max tree without push-down: max_[v] is the maximum of
  // v's range including add_[v] but not the adds of v's ancestors. Empty
  // until the first activation.
  std::vector<int64_t> max_;
  std::vector<int64_t> add_;
  bool allocated_ = false;
};

}  // namespace sluice

#endif  // SLUICE_PLACER_MEMORY_TRACKER_H_
