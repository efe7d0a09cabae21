// The parsed attributes and the shape checks of the selection ops (TopK,
// OneHot, EyeLike, Compress, ReverseSequence, TensorScatter), shared by
// their CPU kernels (kernels/cpu/) and GPU kernels (kernels/cuda/), so both
// accept and reject the same nodes with the same messages. Device-neutral.
//
//   ASSIGN_OR_RETURN(TopKAttrs a, ParseTopKAttrs(node));
//   ASSIGN_OR_RETURN(TopKPlan p, PlanTopK(x, ctx->input(1), a));
//   // p.view.outer lines of p.view.n entries, p.view.inner apart; keep p.k.
//
// Pure functions; thread-safe.
#ifndef SLUICE_KERNELS_SELECT_PARAMS_H_
#define SLUICE_KERNELS_SELECT_PARAMS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "core/dtype.h"
#include "graph/graph.h"

namespace sluice {

// outer x n x inner: a shape seen around one axis.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
// REQUIRES: 0 <= axis < s.rank().
AxisView ViewAround(const Shape& s, int axis);

struct TopKAttrs {
  int64_t axis = -1;
  bool largest = true;
};
absl::StatusOr<TopKAttrs> ParseTopKAttrs(const Node& node);
// TopK of x along `axis` (normalised), keeping k entries of each line.
struct TopKPlan {
  int axis = 0;
  int64_t k = 0;
  AxisView view;
  Shape out_shape;
};
// k from the host tensor `k` (one integer in [0, n]); INVALID_ARGUMENT
// otherwise, or for an axis outside x's rank.
absl::StatusOr<TopKPlan> PlanTopK(const Tensor& x, const Tensor& k,
                                  const TopKAttrs& a);

struct OneHotAttrs {
  int64_t axis = -1;
};
absl::StatusOr<OneHotAttrs> ParseOneHotAttrs(const Node& node);
// The output [outer..., depth, inner...]: depth inserted at `axis`.
struct OneHotPlan {
  int64_t depth = 0, outer = 1, inner = 1;
  Shape out_shape;
};
// Checks the host tensor depth (one value >= 1), values ([off, on]) and the
// axis against indices' rank; INVALID_ARGUMENT naming what is wrong.
absl::StatusOr<OneHotPlan> PlanOneHot(const Tensor& indices,
                                      const Tensor& depth,
                                      const Tensor& values,
                                      const OneHotAttrs& a);

struct EyeLikeAttrs {
  DataType dst = DT_INVALID;
  int64_t k = 0;
};
absl::StatusOr<EyeLikeAttrs> ParseEyeLikeAttrs(const Node& node);
// INVALID_ARGUMENT unless x has rank 2.
absl::Status CheckEyeLikeInput(const Tensor& x);

struct CompressAttrs {
  bool flatten = true;
  int64_t axis = 0;
};
absl::StatusOr<CompressAttrs> ParseCompressAttrs(const Node& node);

struct ReverseSequenceAttrs {
  int64_t batch_axis = 1;
};
// INVALID_ARGUMENT unless batch_axis and time_axis are 0 and 1.
absl::StatusOr<ReverseSequenceAttrs> ParseReverseSequenceAttrs(
    const Node& node);
// x viewed as [batch, steps, row] (batch_first) or [steps, batch, row].
struct ReverseSequencePlan {
  bool batch_first = false;
  int64_t batch = 0, steps = 0;
};
// Checks x's rank (>= 2) and the host tensor sequence_lens
// (CheckSequenceLens, kernels/host_params.h).
absl::StatusOr<ReverseSequencePlan> PlanReverseSequence(
    const Tensor& x, const Tensor& lens, const ReverseSequenceAttrs& a);

struct TensorScatterAttrs {
  bool circular = false;
  int64_t axis = -2;
};
// INVALID_ARGUMENT for a mode other than linear or circular.
absl::StatusOr<TensorScatterAttrs> ParseTensorScatterAttrs(const Node& node);

}  // namespace sluice

#endif  // SLUICE_KERNELS_SELECT_PARAMS_H_
