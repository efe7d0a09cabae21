// The setup of GatherElements, ScatterElements, GatherND and ScatterND,
// written once for their CPU kernels (kernels/cpu/scatter_gather.cc) and
// CUDA kernels (kernels/cuda/scatter_gather_kernels.cc): the attributes
// parsed when the kernel is made, and each call the shapes checked and the
// indices (int32 or int64 in host memory, negative ones counted from the
// end) turned into the element offset in data of every gathered or
// scattered slice. An index out of range is an error naming it, so neither
// device reads or writes outside a buffer, and both say the same thing.
//
//   ASSIGN_OR_RETURN(ScatterGatherAttrs a, ParseScatterGatherAttrs(node));
//   ASSIGN_OR_RETURN(ScatterGatherPlan p,
//                    PlanScatterGather(a, data, indices, &updates));
//   // slice j: data[p.offsets[j] + e] (or updates[j * p.slice + e]), e < p.slice
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_KERNELS_SCATTER_GATHER_PARAMS_H_
#define SLUICE_KERNELS_SCATTER_GATHER_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

// How a scatter combines an update with what is there ("reduction").
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

struct ScatterGatherAttrs {
  bool nd = false;       // GatherND / ScatterND (else the Elements ops)
  bool scatter = false;  // ScatterElements / ScatterND
  int64_t axis = 0;        // the Elements ops
  int64_t batch_dims = 0;  // GatherND
  ScatterReduction reduction = ScatterReduction::kNone;  // the scatters
};
// The node's op says which of the four it is. NOT_FOUND for a missing
// attribute; INVALID_ARGUMENT for an unknown reduction.
absl::StatusOr<ScatterGatherAttrs> ParseScatterGatherAttrs(const Node& node);

struct ScatterGatherPlan {
  // The element offset in data of each slice, in index order: one per
  // index position (the Elements ops) or per index tuple (the ND ops).
  std::vector<int64_t> offsets;
  int64_t slice = 1;  // elements per slice (1 for the Elements ops)
  Shape out_shape;    // a gather's from the indices; a scatter's is data's
};
// Reads `indices` (host memory); of data and updates only the shapes and
// dtypes. `updates` is required for the scatters and ignored otherwise.
// INVALID_ARGUMENT naming what does not fit.
absl::StatusOr<ScatterGatherPlan> PlanScatterGather(
    const ScatterGatherAttrs& a, const Tensor& data, const Tensor& indices,
    const Tensor* updates);

}  // namespace sluice

#endif  // SLUICE_KERNELS_SCATTER_GATHER_PARAMS_H_
