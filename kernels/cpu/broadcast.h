// NumPy broadcasting for the CPU kernels: the broadcast output shape, and a
// plan that walks the output in contiguous rows while tracking where each
// input's elements are. Dimensions that broadcast the same way are merged,
// so [B,S,H] + [H] walks B*S rows of H with the second input's row fixed.
//
//   ASSIGN_OR_RETURN(Shape out, BroadcastShapes({&x.shape(), &y.shape()}));
//   BroadcastPlan<2> plan(out, {&x.shape(), &y.shape()});
//   plan.ForEachRow(0, plan.rows(), [&](int64_t o, const int64_t* in) {...});
//
// Value types; thread-compatible (ForEachRow is const and may run on many
// threads at once).
#ifndef SLUICE_KERNELS_CPU_BROADCAST_H_
#define SLUICE_KERNELS_CPU_BROADCAST_H_

#include <array>
#include <cstdint>
#include <initializer_list>

#include "absl/status/statusor.h"
#include "core/shape.h"

namespace sluice::cpu {

// The NumPy broadcast of fully defined shapes (aligned on the right; a 1
// stretches; 0 broadcasts like any other size). INVALID_ARGUMENT naming the
// shapes when they are incompatible.
absl::StatusOr<Shape> BroadcastShapes(std::initializer_list<const Shape*> shapes);

// Output rows of `inner()` contiguous elements; each input's element for
// output row r, column j is at offset in[i] + j * inner_stride(i).
template <int N>
class BroadcastPlan {
 public:
  // REQUIRES: `out` is the broadcast of `inputs` (N of them).
  BroadcastPlan(const Shape& out, std::initializer_list<const Shape*> inputs);

  int64_t rows() const { return rows_; }
  int64_t inner() const { return inner_; }
  int64_t inner_stride(int i) const { return inner_stride_[i]; }

  // Calls fn(out_offset, in_offsets) for rows [begin, end).
  template <typename F>
  void ForEachRow(int64_t begin, int64_t end, F&& fn) const;

 private:
  int rank_ = 0;  // outer (collapsed) dims, excluding the inner one
  std::array<int64_t, kMaxRank> dims_{};
  std::array<std::array<int64_t, kMaxRank>, N> strides_{};
  std::array<int64_t, N> inner_stride_{};
  int64_t inner_ = 1;
  int64_t rows_ = 1;
};

}  // namespace sluice::cpu

#include "kernels/cpu/broadcast_inl.h"  // IWYU pragma: export

#endif  // SLUICE_KERNELS_CPU_BROADCAST_H_
