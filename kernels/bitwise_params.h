// The parts of BitShift and BitCast that the CPU and CUDA kernels share:
// BitShift's `direction` attribute ("LEFT" or "RIGHT") and BitCast's rule
// that source and destination have one width.
//
//   ASSIGN_OR_RETURN(BitShiftAttrs a, ParseBitShiftAttrs(node));
//   ASSIGN_OR_RETURN(BitCastPlan p, PlanBitCast(attrs(), x));
//
// Pure functions; thread-safe.
#ifndef SLUICE_KERNELS_BITWISE_PARAMS_H_
#define SLUICE_KERNELS_BITWISE_PARAMS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

// BitShift's direction: left for "LEFT", right for "RIGHT";
// INVALID_ARGUMENT otherwise.
struct BitShiftAttrs {
  bool left = true;
};
absl::StatusOr<BitShiftAttrs> ParseBitShiftAttrs(const Node& node);

// INVALID_ARGUMENT when src and dst differ in width.
absl::Status CheckBitCastWidths(DataType src, DataType dst);

// BitCast: x's bytes as `dst` (to bool, a nonzero byte becomes true).
struct BitCastAttrs {
  DataType dst = DT_INVALID;
};
absl::StatusOr<BitCastAttrs> ParseBitCastAttrs(const Node& node);
struct BitCastPlan {
  Shape out_shape;  // x's
  DataType dst = DT_INVALID;
  int64_t bytes = 0;  // x's, and the output's
};
// INVALID_ARGUMENT when x's dtype and dst differ in width.
absl::StatusOr<BitCastPlan> PlanBitCast(const BitCastAttrs& a, const Tensor& x);

}  // namespace sluice

#endif  // SLUICE_KERNELS_BITWISE_PARAMS_H_
