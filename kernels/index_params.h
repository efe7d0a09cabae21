// The setup of ArgMax and ArgMin, CumSum and CumProd, and Trilu, written
// once for their CPU kernels (kernels/cpu/arg_reduce.cc,
// kernels/cpu/trilu_cumsum.cc) and CUDA kernels
// (kernels/cuda/index_kernels.cc): the attributes parsed when the kernel is
// made; each call the shapes checked, the host-memory scalar read (the
// cumulative ops' axis, Trilu's k) and what a launch needs. Both devices
// refuse the same inputs with the same messages. Device-neutral.
//
//   ASSIGN_OR_RETURN(ArgReduceAttrs a, ParseArgReduceAttrs(node));
//   ASSIGN_OR_RETURN(AxisPlan p, PlanArgReduce(a, x.shape()));
//   // p.view.outer x p.view.n x p.view.inner; the output is int64 p.out_shape
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_KERNELS_INDEX_PARAMS_H_
#define SLUICE_KERNELS_INDEX_PARAMS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "kernels/select_params.h"

namespace sluice {

// An input viewed around the op's normalised axis, and the output's shape.
struct AxisPlan {
  int axis = 0;
  AxisView view;
  Shape out_shape;
};

struct ArgReduceAttrs {
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last_index = false;
};
absl::StatusOr<ArgReduceAttrs> ParseArgReduceAttrs(const Node& node);
// INVALID_ARGUMENT for an axis outside x's rank or of size 0.
absl::StatusOr<AxisPlan> PlanArgReduce(const ArgReduceAttrs& a,
                                            const Shape& x);

struct CumulativeAttrs {
  bool prod = false;  // CumProd (else CumSum)
  bool exclusive = false;
  bool reverse = false;
};
absl::StatusOr<CumulativeAttrs> ParseCumulativeAttrs(const Node& node);
// `axis` is the host-memory input: one int32 or int64 within x's rank;
// INVALID_ARGUMENT naming the op's axis otherwise.
absl::StatusOr<AxisPlan> PlanCumulative(const CumulativeAttrs& a,
                                             const Shape& x,
                                             const Tensor& axis);

struct TriluAttrs {
  bool upper = true;
};
absl::StatusOr<TriluAttrs> ParseTriluAttrs(const Node& node);
// x's innermost matrices are rows x cols; k is the diagonal offset.
struct TriluPlan {
  int64_t k = 0, rows = 0, cols = 0;
  Shape out_shape;
};
// `k` is the host-memory input (one int32 or int64); INVALID_ARGUMENT for
// another k or an x of rank < 2.
absl::StatusOr<TriluPlan> PlanTrilu(const Shape& x, const Tensor& k);

}  // namespace sluice

#endif  // SLUICE_KERNELS_INDEX_PARAMS_H_
