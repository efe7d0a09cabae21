// The parts of BitShift and BitCast that the CPU and CUDA kernels share:
// BitShift's `direction` attribute ("LEFT" or "RIGHT") and BitCast's rule
// that source and destination have one width.
//
//   ASSIGN_OR_RETURN(bool left, ParseBitShiftLeft(node));
//   RETURN_IF_ERROR(CheckBitCastWidths(x.dtype(), dst));
//
// Pure functions; thread-safe.
#ifndef SLUICE_KERNELS_BITWISE_PARAMS_H_
#define SLUICE_KERNELS_BITWISE_PARAMS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "graph/graph.h"

namespace sluice {

// True for "LEFT", false for "RIGHT"; INVALID_ARGUMENT otherwise.
absl::StatusOr<bool> ParseBitShiftLeft(const Node& node);

// INVALID_ARGUMENT when src and dst differ in width.
absl::Status CheckBitCastWidths(DataType src, DataType dst);

}  // namespace sluice

#endif  // SLUICE_KERNELS_BITWISE_PARAMS_H_
